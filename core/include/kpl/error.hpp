// Exceptions kpl throws. The command line maps them to exit statuses:
// input_error (bad input: a missing file, a wrong shape, NaN where finite
// values are required) and runtime_error (the computation failed) both exit 1.
#pragma once

#include <stdexcept>
#include <string>

namespace kpl {

// The caller's input is wrong; the message names the file and object at fault.
class input_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Something failed that the input does not explain (I/O, device, library).
class runtime_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace kpl
