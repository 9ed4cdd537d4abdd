// Kept for files that include it: the reduction kernels now live in
// impl/reduce_tree.hpp (1-D) and impl/reduce_matrix.hpp (rows, columns),
// the operations in kpl/reduce_operations.hpp. Include kpl/reduce.hpp.
#pragma once

#include <kpl/reduce.hpp>
