// Checks of output paths before anything is written: the target and its
// directory, outputs that would overwrite an input, and partial files left by
// runs that were killed.
#include "hdf5_internal.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace kpl::hdf5 {

using impl::file_kind;
using impl::in_quotes;

std::string directory_of(const std::string& path) {
  const std::filesystem::path target(path);
  return target.has_parent_path() ? target.parent_path().string() : std::string(".");
}

void require_writable_target(const std::string& output) {
  const std::string directory = directory_of(output);
  const std::string directory_kind = file_kind(directory);
  if (directory_kind == "missing")
    throw input_error("cannot write " + in_quotes(output) + ": directory " + in_quotes(directory) +
                      " does not exist");
  if (directory_kind != "directory")
    throw input_error("cannot write " + in_quotes(output) + ": " + in_quotes(directory) +
                      " is not a directory");
  if (::access(directory.c_str(), W_OK | X_OK) != 0)
    throw input_error("cannot write " + in_quotes(output) + ": directory " + in_quotes(directory) +
                      " is not writable (" + std::strerror(errno) + ")");
  const std::string kind = file_kind(output, /*follow=*/false);
  if (kind != "missing" && kind != "regular file")
    throw input_error("cannot write " + in_quotes(output) + ": it is a " + kind +
                      "; kpl replaces only regular files");
}

void require_distinct(const std::string& output, const std::vector<std::string>& inputs) {
  struct stat written {};
  if (::stat(output.c_str(), &written) != 0) return;  // does not exist yet
  for (const auto& input : inputs) {
    struct stat read {};
    if (::stat(input.c_str(), &read) == 0 && read.st_dev == written.st_dev &&
        read.st_ino == written.st_ino)
      throw input_error("cannot write " + in_quotes(output) + ": it is the input " +
                        in_quotes(input) + (output == input ? "" : " (a link to the same file)") +
                        "; choose another output");
  }
}

std::vector<std::string> stale_partials(const std::string& output) {
  const std::filesystem::path target(output);
  const std::string prefix = target.filename().string() + ".partial-";
  const std::filesystem::path directory(directory_of(output));
  std::vector<std::string> stale;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        digits.size() > 9)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // still running
    std::error_code ignored;
    if (entry.is_regular_file(ignored)) stale.push_back(entry.path().string());
  }
  return stale;
}

std::vector<std::string> remove_stale_partials(const std::string& output) {
  std::vector<std::string> removed;
  for (const auto& path : stale_partials(output)) {
    std::error_code ignored;
    if (std::filesystem::remove(path, ignored)) removed.push_back(path);
  }
  return removed;
}

}  // namespace kpl::hdf5
