// `kpl gam predict`: predictions of a fitted model.
#include "command.hpp"
#include "options.hpp"
#include "process_session.hpp"

#include <kpl/gam_file.hpp>

#include <Kokkos_Timer.hpp>

#include <iostream>
#include <memory>

namespace kpl::cli {
namespace {

struct GamPredictArguments {
  std::string model, input, output, type = "link";
  GamPredictFileOptions options;
};

}  // namespace

Command add_gam_predict_command(CLI::App& gam) {
  auto arguments = std::make_shared<GamPredictArguments>();
  auto* app = gam.add_subcommand(
      "predict",
      "Predict with a fitted model: /prediction [n] (--type link: offset + sum_j f_j, log-odds for "
      "binomial, log mean for poisson; --type response: the mean, mboost's type = \"response\") "
      "and, with --partial-effects, /partial_effects [n, p] (link scale); covariates outside the "
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
  app->add_flag("--partial-effects", arguments->options.partial_effects,
                "Also write each covariate's f_j(x_j)");
  app->add_option("--type", arguments->type,
                  "link, or response: gaussian f, binomial the probability 1 / (1 + e^-f), "
                  "poisson e^f")
      ->check(CLI::IsMember({"link", "response"}))
      ->capture_default_str();
  app->add_option("--offset", arguments->options.offset,
                  "For a model fitted with per-row offsets (gam fit --offset /NAME), required: "
                  "the new rows' offsets, a dataset /NAME [n] of the input or one number for "
                  "all (0: the learners' sum alone, what mboost's predict(newdata) gives); "
                  "refused for other models, whose offset is in the model")
      ->check(offset_value);
  return {app, [arguments](JsonObject& json) {
            clean_stale_partials(arguments->output);
            arguments->options.response = arguments->type == "response";
            const Kokkos::Timer timer;
            const auto rows = predict_gam_file(processes(), arguments->model, arguments->input,
                                               arguments->output, arguments->options);
            const double seconds = timer.seconds();
            if (prints_summary())
              std::cerr << "kpl gam predict: " << rows << " predictions; wrote "
                        << arguments->output << "\n";
            json.set("model", arguments->model)
                .set("input", arguments->input)
                .set("output", arguments->output)
                .set("rows", rows)
                .set("type", arguments->type)
                .set("partial_effects", arguments->options.partial_effects)
                .set("rows_per_second", per_second(rows, seconds));
            json.object("seconds").set("predict", seconds);
            return int(exit_success);
          }};
}

}  // namespace kpl::cli
