#include <kpl/gam_penalty.hpp>
#include <kpl/impl/gam_jacobi_rotation.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <stdexcept>
#include <utility>

namespace kpl {

namespace {

using Matrix = std::vector<double>;  // row-major k x k

// Lower-triangular L with L L^T = A; false when A is not (numerically)
// positive definite.
bool cholesky(const Matrix& a, int k, Matrix& lower) {
  lower.assign(static_cast<std::size_t>(k) * k, 0.0);
  double largest_diagonal = 0;
  for (int i = 0; i < k; ++i) largest_diagonal = std::max(largest_diagonal, a[i * k + i]);
  for (int j = 0; j < k; ++j) {
    double diagonal = a[j * k + j];
    for (int p = 0; p < j; ++p) diagonal -= lower[j * k + p] * lower[j * k + p];
    if (!(diagonal > 1e-14 * largest_diagonal)) return false;
    const double pivot = std::sqrt(diagonal);
    lower[j * k + j] = pivot;
    for (int i = j + 1; i < k; ++i) {
      double sum = a[i * k + j];
      for (int p = 0; p < j; ++p) sum -= lower[i * k + p] * lower[j * k + p];
      lower[i * k + j] = sum / pivot;
    }
  }
  return true;
}

// L^-1 for lower-triangular L (forward substitution on the identity).
Matrix invert_lower(const Matrix& lower, int k) {
  Matrix inverse(static_cast<std::size_t>(k) * k, 0.0);
  for (int column = 0; column < k; ++column) {
    for (int i = column; i < k; ++i) {
      double sum = i == column ? 1.0 : 0.0;
      for (int p = column; p < i; ++p) sum -= lower[i * k + p] * inverse[p * k + column];
      inverse[i * k + column] = sum / lower[i * k + i];
    }
  }
  return inverse;
}

// L^-1 B for lower-triangular L: forward substitution, column by column.
Matrix solve_lower(const Matrix& lower, const Matrix& b, int k) {
  Matrix x(b);
  for (int column = 0; column < k; ++column)
    for (int i = 0; i < k; ++i) {
      double sum = x[i * k + column];
      for (int p = 0; p < i; ++p) sum -= lower[i * k + p] * x[p * k + column];
      x[i * k + column] = sum / lower[i * k + i];
    }
  return x;
}

}  // namespace

namespace {

// Householder reduction of the symmetric a to tridiagonal form, in place
// (Golub & Van Loan §8.3.1).
void reduce_to_tridiagonal(std::vector<double>& a, int k) {
  std::vector<double> v(k), q(k);
  for (int column = 0; column + 2 < k; ++column) {
    double norm = 0;
    for (int i = column + 1; i < k; ++i) norm += a[i * k + column] * a[i * k + column];
    norm = std::sqrt(norm);
    if (norm == 0) continue;
    const double head = a[(column + 1) * k + column];
    const double alpha = head > 0 ? -norm : norm;
    // v = x - alpha e_1, normalised; H = I - 2 v v^T maps x to alpha e_1.
    double v_norm = 0;
    for (int i = column + 1; i < k; ++i) {
      v[i] = a[i * k + column] - (i == column + 1 ? alpha : 0.0);
      v_norm += v[i] * v[i];
    }
    v_norm = std::sqrt(v_norm);
    if (v_norm == 0) continue;
    for (int i = column + 1; i < k; ++i) v[i] /= v_norm;
    // Trailing block A <- H A H = A - v q^T - q v^T, q = 2 A v - 2 (v^T A v) v.
    double vav = 0;
    for (int i = column + 1; i < k; ++i) {
      double sum = 0;
      for (int j = column + 1; j < k; ++j) sum += a[i * k + j] * v[j];
      q[i] = 2 * sum;
      vav += v[i] * sum;
    }
    for (int i = column + 1; i < k; ++i) q[i] -= 2 * vav * v[i];
    for (int i = column + 1; i < k; ++i)
      for (int j = column + 1; j < k; ++j) a[i * k + j] -= v[i] * q[j] + q[i] * v[j];
    a[(column + 1) * k + column] = a[column * k + column + 1] = alpha;
    for (int i = column + 2; i < k; ++i) a[i * k + column] = a[column * k + i] = 0;
  }
}

// The eigenvalues of the symmetric tridiagonal matrix of diagonal and off
// (off[i] couples diagonal[i] and diagonal[i + 1]) by the implicit QL method
// with Wilkinson-type shifts (Golub & Van Loan §8.3.5), into diagonal.
void tridiagonal_eigenvalues(std::vector<double>& diagonal, std::vector<double>& off, int k) {
  const double epsilon = std::numeric_limits<double>::epsilon();
  for (int low = 0; low < k; ++low) {
    for (int sweep = 0;; ++sweep) {
      int high = low;
      while (high + 1 < k && std::fabs(off[high]) > epsilon * (std::fabs(diagonal[high]) +
                                                               std::fabs(diagonal[high + 1])))
        ++high;
      if (high == low) break;
      if (sweep == 100) throw std::runtime_error("kpl::symmetric_eigenvalues: QL did not converge");
      double g = (diagonal[low + 1] - diagonal[low]) / (2 * off[low]);
      double r = std::hypot(g, 1.0);
      g = diagonal[high] - diagonal[low] + off[low] / (g + (g >= 0 ? r : -r));
      double s = 1, c = 1, p = 0;
      int i = high - 1;
      bool underflow = false;
      for (; i >= low; --i) {
        const double f = s * off[i], b = c * off[i];
        r = std::hypot(f, g);
        off[i + 1] = r;
        if (r == 0) {  // split: restart on the smaller problem
          diagonal[i + 1] -= p;
          off[high] = 0;
          underflow = true;
          break;
        }
        s = f / r;
        c = g / r;
        g = diagonal[i + 1] - p;
        r = (diagonal[i] - g) * s + 2 * c * b;
        p = s * r;
        diagonal[i + 1] = g + p;
        g = c * r - b;
      }
      if (underflow) continue;
      diagonal[low] -= p;
      off[low] = g;
      off[high] = 0;
    }
  }
}

}  // namespace

std::vector<double> symmetric_eigenvalues(std::vector<double> a, int k) {
  // Householder reduction to tridiagonal form, then the implicit QL method
  // with Wilkinson-type shifts (Golub & Van Loan §8.3; eigenvalues only):
  // about (4/3) k^3 flops, a tenth of cyclic Jacobi's at k = 32.
  reduce_to_tridiagonal(a, k);
  std::vector<double> diagonal(k), off(k, 0.0);
  for (int i = 0; i < k; ++i) diagonal[i] = a[i * k + i];
  for (int i = 0; i + 1 < k; ++i) off[i] = a[(i + 1) * k + i];
  tridiagonal_eigenvalues(diagonal, off, k);
  std::sort(diagonal.begin(), diagonal.end(), std::greater<>());
  return diagonal;
}

namespace {

// The inner product of two columns of length k, in four interleaved partial
// sums (a fixed order: the same bits on any process and thread count) so
// that the additions do not wait on one another.
double column_product(const double* left, const double* right, int k) {
  double partial[4] = {0, 0, 0, 0};
  int i = 0;
  for (; i + 4 <= k; i += 4)
    for (int r = 0; r < 4; ++r) partial[r] += left[i + r] * right[i + r];
  for (; i < k; ++i) partial[0] += left[i] * right[i];
  return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

using impl::jacobi_rotation;
using impl::JacobiRotation;

// Householder QR with column pivoting of the k x columns matrix a (column-
// major, k >= columns; Golub & Van Loan §5.4.1), a P = Q R: returns R's rows
// as the columns of a columns x columns matrix (column-major), i.e. R^T.
// Each step takes the remaining column of largest norm, so that R's rows
// fall in size: the preconditioner of Drmac & Veselic (2008) under which
// one-sided Jacobi on R^T needs a few sweeps instead of many. Q and P leave
// the singular values as they are.
Matrix pivoted_triangle_rows(Matrix a, int k, int columns) {
  for (int i = 0; i < columns; ++i) {
    int pivot = i;
    double largest = -1;
    for (int j = i; j < columns; ++j) {
      const double norm = column_product(&a[j * k + i], &a[j * k + i], k - i);
      if (norm > largest) largest = norm, pivot = j;
    }
    if (pivot != i)
      std::swap_ranges(a.begin() + pivot * k, a.begin() + (pivot + 1) * k, a.begin() + i * k);
    double* x = &a[i * k + i];
    const int length = k - i;
    const double norm = std::sqrt(largest);
    if (norm > 0) {
      // v = x - alpha e_1 with alpha = -sign(x_0) |x| (no cancellation), in x.
      const double alpha = x[0] >= 0 ? -norm : norm;
      x[0] -= alpha;
      const double scale = 1 / (norm * std::fabs(x[0]));  // 2 / v^T v
      for (int j = i + 1; j < columns; ++j) {
        double* y = &a[j * k + i];
        const double factor = column_product(x, y, length) * scale;
        for (int r = 0; r < length; ++r) y[r] -= factor * x[r];
      }
      x[0] = alpha;
    }
  }
  // R in a's upper triangle, its columns in the final order (the swaps moved
  // whole columns, earlier rows included).
  Matrix rows(static_cast<std::size_t>(columns) * columns, 0.0);
  for (int i = 0; i < columns; ++i)
    for (int j = i; j < columns; ++j) rows[i * columns + j] = a[j * k + i];
  return rows;
}

// The squared column norms of the length x columns matrix x (column-major)
// once one-sided Jacobi (Hestenes; Demmel & Veselic 1992) has rotated its
// pairs of columns until every pair is orthogonal to `tolerance`: the
// squared singular values.
//
// The pairs are visited in the round-robin ("parallel") ordering of Brent &
// Luk (1985), whose sweeps converge as the row-cyclic one's do: each round
// rotates disjoint pairs, so its inner products, rotation angles and updates
// are independent of one another. In the row-cyclic ordering every pair waits
// on the last one's column and on its rotation's chain of divisions and
// square roots; here the processor overlaps a round's pairs. The ordering is
// fixed, so the result has the same bits on every process and thread count.
std::vector<double> jacobi_squared_norms(Matrix x, int length, int columns, double tolerance) {
  std::vector<double> squares(columns);
  // Round-robin seats: seat 0 stays, the others move one place a round; a
  // seat past the last column (columns odd) means its partner sits out.
  const int seats = columns + columns % 2;
  std::vector<int> seat(seats);
  for (int i = 0; i < seats; ++i) seat[i] = i;
  struct Pair {
    int left, right;
    double gamma;
    JacobiRotation rotation;
  };
  std::vector<Pair> pairs(seats / 2);
  for (int sweep = 0;; ++sweep) {
    if (sweep == 60)
      throw std::runtime_error("kpl::demmler_reinsch_eigenvalues: Jacobi did not converge");
    // Squared norms afresh each sweep, then kept up to date by each rotation.
    for (int a = 0; a < columns; ++a)
      squares[a] = column_product(&x[a * length], &x[a * length], length);
    bool rotated = false;
    for (int round = 0; round + 1 < seats; ++round) {
      int count = 0;
      for (int i = 0; i < seats / 2; ++i) {
        const int a = seat[i], b = seat[seats - 1 - i];
        if (a < columns && b < columns) pairs[count++] = {std::min(a, b), std::max(a, b), 0, {}};
      }
      for (int q = 0; q < count; ++q)
        pairs[q].gamma =
            column_product(&x[pairs[q].left * length], &x[pairs[q].right * length], length);
      int rotations = 0;
      for (int q = 0; q < count; ++q) {
        const double alpha = squares[pairs[q].left], beta = squares[pairs[q].right];
        const double gamma = pairs[q].gamma;
        if (alpha == 0 || beta == 0 || std::fabs(gamma) <= tolerance * std::sqrt(alpha * beta))
          continue;
        const JacobiRotation rotation = jacobi_rotation(alpha, beta, gamma);
        squares[pairs[q].left] = alpha - rotation.t * gamma;
        squares[pairs[q].right] = beta + rotation.t * gamma;
        pairs[rotations] = pairs[q];
        pairs[rotations++].rotation = rotation;
      }
      for (int q = 0; q < rotations; ++q) {
        double* left = &x[pairs[q].left * length];
        double* right = &x[pairs[q].right * length];
        const double c = pairs[q].rotation.c, s = pairs[q].rotation.s;
        for (int i = 0; i < length; ++i) {
          const double u = left[i], v = right[i];
          left[i] = c * u - s * v;
          right[i] = s * u + c * v;
        }
      }
      rotated = rotated || rotations > 0;
      std::rotate(seat.begin() + 1, seat.end() - 1, seat.end());
    }
    if (!rotated) break;
  }
  return squares;
}

// The squared singular values of the k x columns matrix w (row-major, row
// stride k): one-sided Jacobi on R^T of w's pivoted QR (Drmac & Veselic's
// preconditioned Jacobi SVD, LAPACK's xGEJSV). Unlike a tridiagonal QL on
// w w^T, it keeps the small values to high relative accuracy when w is
// badly scaled, as L^-1 F is where B^T W B is nearly singular (a basis
// function with almost no weighted rows).
std::vector<double> squared_singular_values(const Matrix& w, int k, int columns) {
  // Rows in falling order of size before the QR (Cox & Higham 1998: with
  // rows of very different sizes Householder QR stays row-wise accurate
  // only so; xGEJSV offers the same, JOBP = 'P').
  std::vector<double> row_sizes(k);
  for (int i = 0; i < k; ++i) row_sizes[i] = column_product(&w[i * k], &w[i * k], columns);
  std::vector<int> order(k);
  for (int i = 0; i < k; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return row_sizes[a] > row_sizes[b]; });
  Matrix column(static_cast<std::size_t>(k) * columns);
  for (int i = 0; i < k; ++i)
    for (int a = 0; a < columns; ++a) column[a * k + i] = w[order[i] * k + a];
  return jacobi_squared_norms(pivoted_triangle_rows(std::move(column), k, columns), columns,
                              columns, k * std::numeric_limits<double>::epsilon());
}

}  // namespace

int semidefinite_factor(const std::vector<double>& penalty, int k, std::vector<double>& factor) {
  Matrix remaining(penalty);
  factor.assign(static_cast<std::size_t>(k) * k, 0.0);
  std::vector<int> order(k);
  for (int i = 0; i < k; ++i) order[i] = i;
  double largest = 0;
  for (int i = 0; i < k; ++i) largest = std::max(largest, penalty[i * k + i]);
  const double floor = k * std::numeric_limits<double>::epsilon() * largest;
  int rank = 0;
  for (; rank < k; ++rank) {
    int pivot = rank;
    for (int i = rank + 1; i < k; ++i)
      if (remaining[order[i] * k + order[i]] > remaining[order[pivot] * k + order[pivot]])
        pivot = i;
    std::swap(order[rank], order[pivot]);
    const int p = order[rank];
    const double diagonal = remaining[p * k + p];
    if (!(diagonal > floor)) break;
    const double root = std::sqrt(diagonal);
    for (int i = rank; i < k; ++i) factor[order[i] * k + rank] = remaining[order[i] * k + p] / root;
    for (int i = rank + 1; i < k; ++i)
      for (int j = rank + 1; j < k; ++j)
        remaining[order[i] * k + order[j]] -=
            factor[order[i] * k + rank] * factor[order[j] * k + rank];
  }
  return rank;
}

std::vector<double> demmler_reinsch_eigenvalues(const std::vector<double>& gram,
                                                const std::vector<double>& penalty, int k) {
  // mboost: A = G + 1e-9 K keeps A positive definite where B alone is not.
  Matrix a(gram);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += 1e-9 * penalty[i];
  Matrix lower;
  if (!cholesky(a, k, lower))
    throw std::invalid_argument("B^T B + 1e-9 K is not positive definite");
  // The eigenvalues of L^-1 K L^-T are the squared singular values of
  // L^-1 F (K = F F^T): no product is formed, so nothing is squared away.
  Matrix factor;
  const int rank = semidefinite_factor(penalty, k, factor);
  const Matrix reduced = solve_lower(lower, factor, k);  // L^-1 F, columns beyond rank zero
  auto eigenvalues = squared_singular_values(reduced, k, rank);
  eigenvalues.resize(k, 0.0);  // K's null space
  std::sort(eigenvalues.begin(), eigenvalues.end(), std::greater<>());
  return eigenvalues;
}

double degrees_of_freedom(const std::vector<double>& eigenvalues, double lambda,
                          DfDefinition definition) {
  double df = 0;
  for (double d : eigenvalues) {
    const double shrink = 1 / (1 + lambda * d);
    df += definition == DfDefinition::trace ? shrink : 2 * shrink - shrink * shrink;
  }
  return df;
}

namespace {

// rank(B) (mboost: rankMatrix(X) by QR): k when G has a Cholesky factor,
// otherwise counted from G's spectrum.
int gram_rank(const Matrix& gram, int k) {
  Matrix unused;
  if (cholesky(gram, k, unused)) return k;
  const auto gram_spectrum = symmetric_eigenvalues(gram, k);
  int rank = 0;
  for (double value : gram_spectrum)
    if (value > gram_spectrum.front() * k * 1e-13) ++rank;
  return rank;
}

// The lambda of df(lambda) = target_df: df(lambda) decreases from rank(B)
// towards the penalty's null-space dimension; bracket the root by doubling,
// then bisect to the last bit.
double lambda_for_df(const std::vector<double>& eigenvalues, double target_df,
                     DfDefinition definition, const std::string& learner) {
  double low = 0, high = 1;
  while (degrees_of_freedom(eigenvalues, high, definition) > target_df) {
    high *= 2;
    if (high > 1e15)
      throw std::invalid_argument(
          learner + ": df " + std::to_string(target_df) + " is not reachable: the penalty leaves " +
          std::to_string(degrees_of_freedom(eigenvalues, 1e15, definition)) +
          " degrees of freedom unpenalised (its null space); ask for more");
  }
  for (int step = 0; step < 200 && high - low > 1e-16 * high; ++step) {
    const double middle = 0.5 * (low + high);
    (degrees_of_freedom(eigenvalues, middle, definition) > target_df ? low : high) = middle;
  }
  return 0.5 * (low + high);
}

// M = (G + lambda K)^-1 through its Cholesky factor, M = L^-T L^-1, and
// R = M (G + 2 lambda K) M = M + lambda M K M (since M (G + lambda K) = I).
// Both are symmetric: each entry is formed once and mirrored. L^-1 is lower
// triangular, so M's (i, j) sums from row max(i, j) of it; K is banded (a
// difference penalty: the order's width on each side), so M K costs k^2
// times the band, not k^3.
void smoother_matrices(const Matrix& gram, const Matrix& penalty, int k, const std::string& learner,
                       LearnerPenalty& result) {
  const std::size_t size = static_cast<std::size_t>(k) * k;
  Matrix system(gram);
  for (std::size_t i = 0; i < size; ++i) system[i] += result.lambda * penalty[i];
  Matrix lower;
  if (!cholesky(system, k, lower))
    throw std::invalid_argument(
        learner + ": B^T B + lambda K is singular (lambda = " + std::to_string(result.lambda) +
        "): the covariate has too few distinct values for " + std::to_string(k) +
        " basis functions; lower the basis size or df");
  const Matrix inverse_lower = invert_lower(lower, k);
  Matrix& inverse = result.inverse;
  inverse.assign(size, 0.0);
  for (int i = 0; i < k; ++i)
    for (int j = i; j < k; ++j) {
      double sum = 0;
      for (int p = j; p < k; ++p) sum += inverse_lower[p * k + i] * inverse_lower[p * k + j];
      inverse[i * k + j] = inverse[j * k + i] = sum;
    }
  int band = 0;
  for (int p = 0; p < k; ++p)
    for (int q = 0; q < k; ++q)
      if (penalty[p * k + q] != 0) band = std::max(band, std::abs(p - q));
  Matrix inverse_penalty(size, 0.0);  // M K
  for (int i = 0; i < k; ++i)
    for (int q = 0; q < k; ++q) {
      double sum = 0;
      for (int p = std::max(0, q - band); p <= std::min(k - 1, q + band); ++p)
        sum += inverse[i * k + p] * penalty[p * k + q];
      inverse_penalty[i * k + q] = sum;
    }
  Matrix& reduction = result.reduction;
  reduction.assign(size, 0.0);
  for (int i = 0; i < k; ++i)
    for (int j = i; j < k; ++j) {
      const double shrinkage = column_product(&inverse_penalty[i * k], &inverse[j * k], k);
      reduction[i * k + j] = reduction[j * k + i] = inverse[i * k + j] + result.lambda * shrinkage;
    }
}

}  // namespace

LearnerPenalty penalise_learner(const std::vector<double>& gram, const std::vector<double>& penalty,
                                int k, double target_df, DfDefinition definition,
                                const std::string& learner, int unpenalised) {
  const std::size_t size = static_cast<std::size_t>(k) * k;
  if (gram.size() != size || penalty.size() != size)
    throw std::invalid_argument("kpl::penalise_learner: matrices must be " + std::to_string(k) +
                                " x " + std::to_string(k));
  if (!(target_df > 0) || target_df > k)
    throw std::invalid_argument(learner + ": df " + std::to_string(target_df) +
                                " outside (0, basis size " + std::to_string(k) + "]");
  if (target_df <= unpenalised)
    throw std::invalid_argument(learner + ": df " + std::to_string(target_df) +
                                " is not reachable: the penalty leaves " +
                                std::to_string(unpenalised) +
                                " degrees of freedom unpenalised (its null space); ask for more");
  const int rank = gram_rank(gram, k);
  LearnerPenalty result;
  std::vector<double> eigenvalues;
  try {
    eigenvalues = demmler_reinsch_eigenvalues(gram, penalty, k);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(learner + ": B^T B is singular even with the penalty's 1e-9 " +
                                "ridge (the covariate has too few distinct values)");
  }
  if (target_df >= std::min(rank, k)) {
    result.lambda = 0;
    result.df = std::min(rank, k);
  } else {
    result.lambda = lambda_for_df(eigenvalues, target_df, definition, learner);
    result.df = degrees_of_freedom(eigenvalues, result.lambda, definition);
  }
  smoother_matrices(gram, penalty, k, learner, result);
  return result;
}

}  // namespace kpl
