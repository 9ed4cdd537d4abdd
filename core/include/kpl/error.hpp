// Exceptions kpl throws. The command line maps them to exit statuses:
// input_error (bad input: a missing file, a wrong shape, NaN where finite
// values are required) exits 2; runtime_error (the computation or the system
// failed) and resource_error (kpl/resources.hpp: too little memory or disk)
// exit 4; std::invalid_argument (options no data can satisfy) exits 1.
#pragma once

#include <cstdio>
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

// A number for a message: "1e+308", "0.25", "nan" (std::to_string prints
// 1e308 as 309 digits and tiny values as 0.000000).
inline std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

}  // namespace kpl
