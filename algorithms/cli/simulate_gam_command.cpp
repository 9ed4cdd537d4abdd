// `kpl simulate gam`: Sieminski & Lee's §4.1 data.
#include "command.hpp"
#include "kokkos_session.hpp"
#include "options.hpp"

#include <kpl/gam_file.hpp>

#include <iostream>
#include <memory>

namespace kpl::cli {
namespace {

struct SimulateGamArguments {
  GamSimulation simulation;
  std::string output;
};

}  // namespace

Command add_simulate_gam_command(CLI::App& simulate) {
  auto arguments = std::make_shared<SimulateGamArguments>();
  auto& simulation = arguments->simulation;
  auto* app = simulate.add_subcommand(
      "gam",
      "Sieminski & Lee's simulation for kpl gam fit: x_j ~ U(0, 1), a random set of informative "
      "covariates adds 10 sin(2 pi x_j) each, intercept 7, Gaussian noise; writes /X, /y, "
      "/informative");
  app->add_option("--n", simulation.observations, "Observations")
      ->check(CLI::Range(std::int64_t(1), std::int64_t(1) << 40))
      ->capture_default_str();
  app->add_option("--p", simulation.covariates, "Covariates")
      ->check(CLI::Range(std::int64_t(1), std::int64_t(1) << 30))
      ->capture_default_str();
  app->add_option("--informative", simulation.informative,
                  "Covariates with an effect (at most --p)")
      ->check(CLI::Range(std::int64_t(0), std::int64_t(1) << 30))
      ->capture_default_str();
  app->add_option("--seed", simulation.seed, "Random seed")
      ->check(non_negative_integer)
      ->capture_default_str();
  app->add_option("--noise-variance", simulation.noise_variance, "Variance of the noise")
      ->check(finite_number)
      ->check(CLI::Range(0.0, 1e300))
      ->capture_default_str();
  app->add_option("--output", arguments->output, "HDF5 file to write")
      ->check(non_empty_path)
      ->required();
  return {app, [arguments](JsonObject& json) {
            const auto& simulation = arguments->simulation;
            if (simulation.informative > simulation.covariates)
              throw usage_error("--informative " + std::to_string(simulation.informative) +
                                " exceeds --p " + std::to_string(simulation.covariates));
            clean_stale_partials(arguments->output);
            simulate_gam_file(simulation, arguments->output);
            json.set("output", arguments->output)
                .set("observations", simulation.observations)
                .set("covariates", simulation.covariates)
                .set("informative", simulation.informative)
                .set("seed", simulation.seed)
                .set("noise_variance", simulation.noise_variance);
            std::cerr << "kpl simulate gam: wrote " << simulation.observations << " x "
                      << simulation.covariates << " covariates to " << arguments->output << "\n";
            return int(exit_success);
          }};
}

}  // namespace kpl::cli
