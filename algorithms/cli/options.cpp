#include "options.hpp"

#include "command.hpp"

#include <kpl/hdf5_io.hpp>

#include <cmath>
#include <iostream>
#include <limits>
#include <string>

namespace kpl::cli {

std::string to_string(Precision precision) {
  return precision == Precision::single_precision ? "float" : "double";
}

const Choices<Precision> precisions({Precision::double_precision, Precision::single_precision});
const Choices<NnlsOrthogonalization> orthogonalizations(
    {NnlsOrthogonalization::automatic, NnlsOrthogonalization::classical_twice,
     NnlsOrthogonalization::modified_gram_schmidt});
const Choices<NnlsGradient> gradients({NnlsGradient::automatic, NnlsGradient::from_residual,
                                       NnlsGradient::from_cross_products});
const Choices<PulseOrigin> pulse_origins({PulseOrigin::start, PulseOrigin::center});
const Choices<GamFamily> gam_families({GamFamily::gaussian, GamFamily::binomial,
                                       GamFamily::poisson});
const Choices<GamMode> gam_modes({GamMode::direct, GamMode::gram});
const Choices<GamBasis> gam_bases({GamBasis::automatic, GamBasis::compact, GamBasis::dense,
                                   GamBasis::evaluated});
const Choices<GemvStrategy> gemv_strategies({GemvStrategy::automatic, GemvStrategy::thread_per_row,
                                             GemvStrategy::team_per_dot, GemvStrategy::partial_rows,
                                             GemvStrategy::kokkos_kernels});
const Choices<DfDefinition> df_definitions({DfDefinition::trace, DfDefinition::trace_2s_sts});

const CLI::Validator finite_number(
    [](std::string& text) {
      try {
        std::size_t used = 0;
        const double value = std::stod(text, &used);
        if (used == text.size() && std::isfinite(value)) return std::string();
      } catch (...) {
      }
      return "'" + text + "' is not a finite number";
    },
    "FINITE");

const CLI::Validator non_negative_integer(
    [](std::string& text) {
      if (!text.empty() && text.size() <= 20 &&
          text.find_first_not_of("0123456789") == std::string::npos)
        return std::string();
      return "'" + text + "' is not a non-negative integer";
    },
    "UINT");

const CLI::Validator non_empty_path(
    [](std::string& text) {
      return text.empty() ? std::string("a file name is required") : std::string();
    },
    "PATH");

const CLI::Validator dataset_name(
    [](std::string& text) {
      return text.size() > 1 && text.front() == '/'
                 ? std::string()
                 : "'" + text + "' is not a dataset name (/NAME)";
    },
    "/NAME");

const CLI::Validator offset_value(
    [](std::string& text) {
      if (!text.empty() && text.front() == '/') return dataset_name(text);
      std::string copy = text;
      return finite_number(copy).empty()
                 ? std::string()
                 : "'" + text + "' is neither a finite number nor a dataset name (/NAME)";
    },
    "NUMBER|/NAME");

const CLI::Validator file_and_dataset(
    [](std::string& text) {
      const auto colon = text.rfind(':');
      if (colon == std::string::npos || colon == 0) return "'" + text + "' is not FILE:/NAME";
      std::string dataset = text.substr(colon + 1);
      return dataset_name(dataset).empty() ? std::string() : "'" + text + "' is not FILE:/NAME";
    },
    "FILE:/NAME");

void add_solver_options(CLI::App* command, SolverArguments& arguments,
                        const std::string& max_passive_default) {
  precisions.add(command, "--precision", arguments.precision, "Arithmetic precision");
  command
      ->add_option("--max-iterations", arguments.nnls.max_iterations,
                   "Cap on passive least-squares solves per system (default 3n)")
      ->check(CLI::Range(1, 1 << 30));
  command
      ->add_option("--tolerance", arguments.nnls.tolerance,
                   "A zero-set column enters while its gradient w_j = a_j^T (b - A x) exceeds "
                   "this x ||a_j|| ||b|| (relative: the units of A and b do not matter; default "
                   "10 eps max(m, n))")
      ->check(finite_number)
      ->check(CLI::Range(0.0, 1.0));
  command
      ->add_option("--kkt-tolerance", arguments.nnls.kkt_tolerance,
                   "A system is reported converged only if the KKT check after the solve finds "
                   "no violation above this x ||a_j|| ||b|| (written as /kkt_residual; default "
                   "10 eps max(m, n))")
      ->check(finite_number)
      ->check(CLI::Range(0.0, 1.0));
  command
      ->add_option("--max-passive", arguments.nnls.max_passive,
                   "Cap on the passive set per system; Q takes m x this memory (default " +
                       max_passive_default + ")")
      ->check(CLI::Range(1, 1 << 30));
  orthogonalizations.add(command, "--orthogonalization", arguments.orthogonalization,
                         "How an entering column is orthogonalised against the passive set's Q "
                         "(automatic: modified Gram-Schmidt on CPUs, classical twice on GPUs)");
  command->add_flag("--strict", arguments.strict,
                    "Exit with status 3 if any system did not converge");
  command->add_flag("--collective-io", arguments.collective_io,
                    "Under mpiexec: deal the chunks to the processes round-robin and write each "
                    "round's rows in one collective MPI-IO call (for parallel file systems), "
                    "instead of handing chunks out as processes come free, each writing alone");
}

RowWrites row_writes(const SolverArguments& arguments) {
  return arguments.collective_io ? RowWrites::collective : RowWrites::independent;
}

NnlsOptions solver_options(const SolverArguments& arguments) {
  NnlsOptions options = arguments.nnls;
  options.orthogonalization = orthogonalizations(arguments.orthogonalization);
  options.gradient = gradients(arguments.gradient);
  return options;
}

void clean_stale_partials(const std::string& output) {
  for (const auto& removed : hdf5::remove_stale_partials(output))
    std::cerr << "kpl: removed '" << removed << "', left by an interrupted run\n";
}

int report_statuses(const std::string& command, std::int64_t systems, const char* what,
                    const std::int64_t (&counts)[nnls_status_count], bool strict,
                    JsonObject& summary) {
  auto& by_status = summary.object("status_counts");
  std::cerr << "kpl " << command << ": " << systems << " " << what << ":";
  for (int status = 0; status < nnls_status_count; ++status) {
    const std::string name = to_string(static_cast<NnlsStatus>(status));
    std::cerr << (status > 0 ? ", " : " ") << counts[status] << " " << name;
    by_status.set(name, counts[status]);
  }
  std::cerr << "\n";
  const bool all_converged = counts[0] == systems;
  if (strict && !all_converged) {
    const std::string error = "kpl " + command + ": --strict: " +
                              std::to_string(systems - counts[0]) + " of " +
                              std::to_string(systems) + " " + what + " did not converge";
    std::cerr << error << "\n";
    summary.set("error", error);
    return exit_not_converged;
  }
  return exit_success;
}

void report_balance(JsonObject& summary, const WorkBalance& balance, const std::string& items) {
  summary.object("balance")
      .set("processes", balance.ranks)
      .set("busy_seconds_max", balance.busy_seconds_max)
      .set("busy_seconds_mean", balance.busy_seconds_mean)
      .set("imbalance", balance.imbalance())
      .set(items + "_min", balance.items_min)
      .set(items + "_max", balance.items_max);
}

double per_second(std::int64_t count, double seconds) {
  return seconds > 0 ? static_cast<double>(count) / seconds
                     : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace kpl::cli
