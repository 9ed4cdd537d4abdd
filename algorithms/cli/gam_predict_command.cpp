// `kpl gam predict`: predictions of a fitted model.
#include "command.hpp"
#include "options.hpp"
#include "process_session.hpp"

#include <kpl/gam_file.hpp>

#include <iostream>
#include <memory>

namespace kpl::cli {
namespace {

struct GamPredictArguments {
  std::string model, input, output;
  bool partial_effects = false;
};

}  // namespace

Command add_gam_predict_command(CLI::App& gam) {
  auto arguments = std::make_shared<GamPredictArguments>();
  auto* app = gam.add_subcommand(
      "predict",
      "Predict with a fitted model: /prediction [n] (link scale: log-odds for binomial, log mean "
      "for poisson) and, with --partial-effects, /partial_effects [n, p]; covariates outside the "
      "training range continue linearly. A model file that is not a complete kpl model (unknown "
      "family or penalty, a missing attribute) is refused");
  app->add_option("--model", arguments->model, "Model file from kpl gam fit")
      ->check(non_empty_path)
      ->required();
  app->add_option("--input", arguments->input, "HDF5 file with /X [n, p]")
      ->check(non_empty_path)
      ->required();
  app->add_option("--output", arguments->output, "HDF5 file to write")
      ->check(non_empty_path)
      ->required();
  app->add_flag("--partial-effects", arguments->partial_effects,
                "Also write each covariate's f_j(x_j)");
  return {app, [arguments] {
            clean_stale_partials(arguments->output);
            const auto rows = predict_gam_file(processes(), arguments->model, arguments->input,
                                               arguments->output, arguments->partial_effects);
            if (prints_summary())
              std::cerr << "kpl gam predict: " << rows << " predictions; wrote "
                        << arguments->output << "\n";
            return int(exit_success);
          }};
}

}  // namespace kpl::cli
