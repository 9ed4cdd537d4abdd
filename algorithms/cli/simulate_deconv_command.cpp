// `kpl simulate deconv`: LVIS-like waveforms with known returns.
#include "command.hpp"
#include "options.hpp"

#include <kpl/deconvolution.hpp>

#include <iostream>
#include <memory>

namespace kpl::cli {
namespace {

struct SimulateDeconvArguments {
  DeconvolutionSimulation simulation;
  std::string output;
};

}  // namespace

Command add_simulate_deconv_command(CLI::App& simulate) {
  auto arguments = std::make_shared<SimulateDeconvArguments>();
  auto& simulation = arguments->simulation;
  auto* app = simulate.add_subcommand(
      "deconv",
      "LVIS-like waveforms for kpl deconv: per waveform a Gaussian transmit pulse 15-25 samples "
      "wide, 1-4 returns, Gaussian noise; writes /waveforms, /pulse, /x_true");
  app->add_option("--waveforms", simulation.waveforms, "Number of waveforms")
      ->check(CLI::Range(std::int64_t(1), std::int64_t(1) << 40))
      ->capture_default_str();
  app->add_option("--samples", simulation.samples, "Samples per waveform")
      ->check(CLI::Range(std::int64_t(50), std::int64_t(1) << 30))
      ->capture_default_str();
  app->add_option("--seed", simulation.seed, "Random seed")
      ->check(non_negative_integer)
      ->capture_default_str();
  app->add_option("--noise", simulation.noise, "Standard deviation of the added noise")
      ->check(finite_number)
      ->check(CLI::Range(0.0, 1e300))
      ->capture_default_str();
  app->add_option("--output", arguments->output, "HDF5 file to write")
      ->check(non_empty_path)
      ->required();
  return {app, [arguments](JsonObject& json) {
            clean_stale_partials(arguments->output);
            simulate_deconvolution_file(arguments->simulation, arguments->output);
            json.set("output", arguments->output)
                .set("waveforms", arguments->simulation.waveforms)
                .set("samples", arguments->simulation.samples)
                .set("seed", arguments->simulation.seed)
                .set("noise", arguments->simulation.noise);
            std::cerr << "kpl simulate deconv: wrote " << arguments->simulation.waveforms
                      << " waveforms of " << arguments->simulation.samples << " samples to "
                      << arguments->output << "\n";
            return int(exit_success);
          }};
}

}  // namespace kpl::cli
