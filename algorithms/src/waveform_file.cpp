// Waveform file layouts (kpl/waveform_file.hpp): recognising kpl's own and
// LVIS Level-1B files, the datasets named with --dataset, and the checks of
// their shapes, each failure naming the file and the dataset.
#include <kpl/waveform_file.hpp>

#include <stdexcept>

namespace kpl {
namespace {

std::string absolute(const std::string& name) {
  return !name.empty() && name[0] == '/' ? name : "/" + name;
}

std::string quoted(const hdf5::InputFile& input) { return "'" + input.path() + "'"; }

std::string dims(std::int64_t rows) { return "[" + std::to_string(rows) + "]"; }

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string text = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

// The layout's datasets before --dataset changes them.
WaveformFileLayout recognised_layout(const hdf5::InputFile& input,
                                     const WaveformDatasetNames& names) {
  WaveformFileLayout layout;
  // One of a layout's datasets decides it: the other's absence is then
  // reported by name (dataset_shape: "dataset /pulse is missing").
  if (input.has_dataset("/RXWAVE") || input.has_dataset("/TXWAVE")) {
    layout.kind = WaveformLayoutKind::lvis;
    layout.waveforms = "/RXWAVE";
    layout.pulse = "/TXWAVE";
    layout.noise = "/SIGMEAN";
    layout.normalise_pulses = true;
  } else if (input.has_dataset("/waveforms") || input.has_dataset("/pulse")) {
    layout.waveforms = "/waveforms";
    layout.pulse = "/pulse";
  } else if (!names.waveforms.empty() && !names.pulse.empty()) {
    layout.kind = WaveformLayoutKind::named;
  } else {
    throw input_error(quoted(input) +
                      ": neither kpl's layout (datasets /waveforms and /pulse) nor LVIS Level-1B "
                      "(/RXWAVE, /TXWAVE, /SIGMEAN); name its datasets with --dataset "
                      "waveforms=NAME,pulse=NAME[,noise=NAME]");
  }
  if (!names.waveforms.empty()) layout.waveforms = absolute(names.waveforms);
  if (!names.pulse.empty()) layout.pulse = absolute(names.pulse);
  if (!names.noise.empty()) layout.noise = absolute(names.noise);
  return layout;
}

void check_waveforms_and_pulse(const hdf5::InputFile& input, WaveformFileLayout& layout) {
  const std::string where = quoted(input) + ": dataset ";
  const auto received = input.shape(layout.waveforms);  // says what is missing or wrong
  const auto pulse = input.shape(layout.pulse);
  if (received.size() != 2)
    throw input_error(where + layout.waveforms + " must be [shots, samples], not of rank " +
                      std::to_string(received.size()) + " " + shape_text(received));
  if (pulse.size() != 1 && pulse.size() != 2)
    throw input_error(where + layout.pulse + " must be [L] or [shots, L], not of rank " +
                      std::to_string(pulse.size()) + " " + shape_text(pulse));
  layout.shots = std::int64_t(received[0]);
  layout.samples = std::int64_t(received[1]);
  layout.pulse_length = std::int64_t(pulse.back());
  layout.pulse_per_shot = pulse.size() == 2;
  if (layout.shots == 0 || layout.samples == 0)
    throw input_error(where + layout.waveforms + " is empty (shape " + shape_text(received) + ")");
  if (layout.pulse_length == 0) throw input_error(where + layout.pulse + " is empty");
  if (layout.pulse_per_shot)
    hdf5::require_matching_extent(input, layout.pulse, 0, layout.waveforms, 0);
  if (layout.pulse_length > layout.samples)
    throw input_error(quoted(input) + ": the pulse (" + std::to_string(layout.pulse_length) +
                      " samples) is longer than the waveforms (" + std::to_string(layout.samples) +
                      " samples)");
}

void check_noise(const hdf5::InputFile& input, WaveformFileLayout& layout) {
  if (layout.noise.empty()) return;
  if (layout.kind == WaveformLayoutKind::lvis && !input.has_dataset(layout.noise) &&
      layout.noise == "/SIGMEAN")
    throw input_error(quoted(input) +
                      ": an LVIS file (/RXWAVE, /TXWAVE) without /SIGMEAN, the noise level of "
                      "its waveforms; name another with --dataset noise=NAME");
  const auto noise = input.shape(layout.noise);
  if (noise.size() == 1 && std::int64_t(noise[0]) == layout.shots) {
    layout.noise_per_shot = true;
  } else if (!(noise.size() == 1 && noise[0] == 1)) {
    throw input_error(quoted(input) + ": dataset " + layout.noise + " (the noise level) must be " +
                      dims(layout.shots) + " (one per shot) or [1], not " + shape_text(noise));
  }
}

// A [shots] dataset, or input_error naming what it is instead.
void require_per_shot(const hdf5::InputFile& input, const WaveformFileLayout& layout,
                      const std::string& dataset) {
  const auto shape = input.shape(dataset);
  if (shape.size() != 1 || std::int64_t(shape[0]) != layout.shots)
    throw input_error(quoted(input) + ": dataset " + dataset + " must be " + dims(layout.shots) +
                      " (one value per shot of " + layout.waveforms + "), not " +
                      shape_text(shape));
}

// Z0 and Z<k>, k = samples - 1 where present, else the largest k below it.
void find_elevations(const hdf5::InputFile& input, WaveformFileLayout& layout) {
  if (!input.has_dataset("/Z0")) return;
  for (std::int64_t k = layout.samples - 1; k > 0; --k) {
    const std::string last = "/Z" + std::to_string(k);
    if (!input.has_dataset(last)) continue;
    require_per_shot(input, layout, "/Z0");
    require_per_shot(input, layout, last);
    layout.elevation_first = "/Z0";
    layout.elevation_last = last;
    layout.elevation_sample = k;
    return;
  }
}

void find_copied(const hdf5::InputFile& input, WaveformFileLayout& layout) {
  std::vector<std::string> candidates = {"/SHOTNUMBER", "/LFID", "/TIME", "/LON0", "/LAT0", "/Z0"};
  if (layout.has_elevations()) {
    const std::string k = std::to_string(layout.elevation_sample);
    for (const char* name : {"/LON", "/LAT", "/Z"}) candidates.push_back(name + k);
  }
  for (const auto& name : candidates) {
    if (!input.has_dataset(name)) continue;
    require_per_shot(input, layout, name);
    layout.copied.push_back(name);
  }
}

}  // namespace

WaveformDatasetNames parse_waveform_dataset_names(const std::string& text) {
  WaveformDatasetNames names;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const std::size_t equals = item.find('=');
    const std::string role = item.substr(0, equals),
                      name = equals == std::string::npos ? "" : item.substr(equals + 1);
    std::string* target = role == "waveforms" ? &names.waveforms
                          : role == "pulse"   ? &names.pulse
                          : role == "noise"   ? &names.noise
                                              : nullptr;
    if (target == nullptr || name.empty() || name == "/")
      throw std::invalid_argument("--dataset: '" + item +
                                  "' is not ROLE=NAME with ROLE waveforms, pulse or noise");
    if (!target->empty()) throw std::invalid_argument("--dataset: " + role + " named twice");
    *target = name;
    start = end + 1;
  }
  return names;
}

std::string to_string(WaveformLayoutKind kind) {
  switch (kind) {
    case WaveformLayoutKind::lvis:
      return "lvis";
    case WaveformLayoutKind::named:
      return "named";
    default:
      return "kpl";
  }
}

std::string WaveformFileLayout::describe() const {
  std::string text = to_string(kind) + ": " + waveforms + " [" + std::to_string(shots) + ", " +
                     std::to_string(samples) + "], " + pulse + " [" +
                     (pulse_per_shot ? std::to_string(shots) + ", " : "") +
                     std::to_string(pulse_length) + "]";
  if (!noise.empty()) text += ", noise " + noise + (noise_per_shot ? " [W]" : " [1]");
  if (has_elevations()) text += ", elevations " + elevation_first + " " + elevation_last;
  return text;
}

WaveformFileLayout find_waveform_layout(const hdf5::InputFile& input,
                                        const WaveformDatasetNames& names) {
  WaveformFileLayout layout = recognised_layout(input, names);
  check_waveforms_and_pulse(input, layout);
  check_noise(input, layout);
  if (layout.kind == WaveformLayoutKind::lvis) {
    find_elevations(input, layout);
    find_copied(input, layout);
  }
  return layout;
}

namespace impl {

void fail_flat_pulse(const hdf5::InputFile& input, const WaveformFileLayout& layout,
                     std::int64_t shot) {
  throw input_error(quoted(input) + ": dataset " + layout.pulse + " row " + std::to_string(shot) +
                    ": the transmitted pulse has nothing above its baseline (the mean of its "
                    "first " +
                    std::to_string(lvis_baseline_samples) + " samples)");
}

std::vector<double> read_noise_rows(const hdf5::InputFile& input, const WaveformFileLayout& layout,
                                    std::int64_t first, std::int64_t count, bool checked) {
  const hdf5::ReadRequirements finite{true, false, checked};
  std::vector<double> noise(std::size_t(count), 0.0);
  if (layout.noise.empty()) return noise;
  if (!layout.noise_per_shot) {
    const double level = input.read<double, 1>(layout.noise, finite)(0);
    std::fill(noise.begin(), noise.end(), level);
    return noise;
  }
  const auto rows =
      input.read_rows<double, 1>(layout.noise, std::size_t(first), std::size_t(count), finite);
  for (std::int64_t s = 0; s < count; ++s) noise[s] = rows(s);
  return noise;
}

std::vector<ElevationSpan> read_elevation_rows(const hdf5::InputFile& input,
                                               const WaveformFileLayout& layout, std::int64_t first,
                                               std::int64_t count) {
  // Not required finite: a shot without geolocation has returns of unknown
  // (NaN) elevation, which is what its file says.
  const auto top =
      input.read_rows<double, 1>(layout.elevation_first, std::size_t(first), std::size_t(count));
  const auto bottom =
      input.read_rows<double, 1>(layout.elevation_last, std::size_t(first), std::size_t(count));
  std::vector<ElevationSpan> spans(static_cast<std::size_t>(count));
  for (std::int64_t s = 0; s < count; ++s)
    spans[s] = {top(s), bottom(s), double(layout.elevation_sample)};
  return spans;
}

}  // namespace impl
}  // namespace kpl
