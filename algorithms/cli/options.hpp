// Options several subcommands share, and the one table per enumerated option
// that both checks what the user typed and turns it into the library's enum.
#pragma once

#include "json_report.hpp"

#include <kpl/deconvolution.hpp>
#include <kpl/gam.hpp>
#include <kpl/nnls.hpp>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kpl::cli {

// The names of an enumeration's values (their to_string) and the way back.
template <class Enum>
class Choices {
 public:
  explicit Choices(std::vector<Enum> values) : values_(std::move(values)) {}
  std::vector<std::string> names() const {
    std::vector<std::string> names;
    for (const Enum value : values_) names.emplace_back(to_string(value));
    return names;
  }
  // `name` was checked by the option's validator.
  Enum operator()(const std::string& name) const {
    for (const Enum value : values_)
      if (std::string(to_string(value)) == name) return value;
    return values_.front();
  }
  // An option taking one of the names into `target`; a wrong one is a usage
  // error that lists the allowed names.
  CLI::Option* add(CLI::App* app, const std::string& flag, std::string& target,
                   const std::string& description) const {
    return app->add_option(flag, target, description)
        ->check(CLI::IsMember(names()))
        ->capture_default_str();
  }

 private:
  std::vector<Enum> values_;
};

enum class Precision { double_precision, single_precision };
std::string to_string(Precision precision);

extern const Choices<Precision> precisions;
extern const Choices<NnlsOrthogonalization> orthogonalizations;
extern const Choices<NnlsGradient> gradients;
extern const Choices<PulseOrigin> pulse_origins;
extern const Choices<GamFamily> gam_families;
extern const Choices<GamMode> gam_modes;
extern const Choices<GamBasis> gam_bases;
extern const Choices<GemvStrategy> gemv_strategies;
extern const Choices<DfDefinition> df_definitions;

// Validators: a finite number (NaN and +-Inf are refused by name), a
// non-negative integer (seeds: "-1" would wrap to 2^64 - 1), a non-empty path.
extern const CLI::Validator finite_number;
extern const CLI::Validator non_negative_integer;
extern const CLI::Validator non_empty_path;
// An HDF5 dataset name (/NAME); a finite number or /NAME (offsets); FILE:/NAME.
extern const CLI::Validator dataset_name;
extern const CLI::Validator offset_value;
extern const CLI::Validator file_and_dataset;

// The solver options `kpl nnls` and `kpl deconv` share.
struct SolverArguments {
  std::string precision = "double";
  std::string orthogonalization = "automatic";
  std::string gradient = "automatic";
  NnlsOptions nnls;
  bool strict = false;
  bool collective_io = false;
};
void add_solver_options(CLI::App* command, SolverArguments& arguments,
                        const std::string& max_passive_default);
NnlsOptions solver_options(const SolverArguments& arguments);
RowWrites row_writes(const SolverArguments& arguments);

// Output files that a killed run left behind are removed before a new one
// starts, and said so on stderr.
void clean_stale_partials(const std::string& output);

// The one-line status summary on stderr, and the exit status it implies;
// also into `summary`: "status_counts" ({"converged": n, "max_iterations": n,
// ...}, every status by its name) and, when --strict fails, "error" (the
// line on stderr).
int report_statuses(const std::string& command, std::int64_t systems, const char* what,
                    const std::int64_t (&counts)[nnls_status_count], bool strict,
                    JsonObject& summary);

// "balance" in `summary`: the processes, their busiest and mean seconds, the
// imbalance and the fewest and most `items` ("systems") one process solved.
void report_balance(JsonObject& summary, const WorkBalance& balance, const std::string& items);

// count / seconds; NaN (null in JSON) when no time was measured.
double per_second(std::int64_t count, double seconds);

}  // namespace kpl::cli
