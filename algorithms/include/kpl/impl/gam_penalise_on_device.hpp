// The GAM's penalties where the fit runs: lambda_j, M_j and R_j for every
// learner from its G_j = B_j^T W B_j, one team per learner, the steps of
// src/gam_penalty.cpp (kpl/gam_penalty.hpp says what they compute and why).
//
// On a GPU the host's search is what a fit of 1e5 rows waits for longest
// after its iterations: G crosses to the host, p eigenproblems share the
// host's cores, M and R cross back. Here G stays where it is and M, R are
// written where the iterations read them.
//
// A team follows the host's algorithm and its decisions. The Cholesky
// factors and forward substitutions add in the host's order, with its
// roundings; the other reductions are grouped by the team's lanes, so the
// bits differ from the host's in the last places, and the same team shape
// gives the same bits on every run.
// A learner whose problem is not the usual one (G singular without the
// ridge, so that rank(B) needs G's spectrum; Jacobi not converged; a df no
// lambda reaches; G + lambda K singular; values that are not finite) is
// marked, and the host's penalise_learner takes it: it has the spectrum
// code, and it says what is wrong with the covariate.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/gam_penalty.hpp>
#include <kpl/impl/gam_jacobi_rotation.hpp>
#include <kpl/impl/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace kpl {
namespace impl {

namespace gam_math = compat::math;

// A learner's outcome in GamPenaltyOutputs::status.
inline constexpr int gam_penalty_done = 0;
inline constexpr int gam_penalty_for_the_host = 1;

// What every learner shares, resolved on the host.
struct GamPenaltyProblem {
  int k = 0;
  int rank = 0;  // K's rank: F's columns
  int band = 0;  // K's half bandwidth (the difference order)
  double target_df = 0;
  double jacobi_tolerance = 0;  // k eps: a pair counts as orthogonal below it
  DfDefinition definition = DfDefinition::trace;
};

// sum over i < count of term(i) by the calling thread's vector lanes; every
// lane receives it.
template <class Member, class Accumulator = double, class Term>
KOKKOS_INLINE_FUNCTION Accumulator gam_lanes_sum(const Member& member, int count,
                                                 const Term& term) {
  Accumulator sum = 0;
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(member, count),
      [&](const int i, Accumulator& partial) { partial += term(i); }, sum);
  return sum;
}

// work() by one vector lane of the calling thread, after every lane's reads
// before the call (a CUDA warp's lanes are ordered by __syncwarp, which
// Kokkos' single gives only after the work), its writes then visible to the
// thread's other lanes.
template <class Member, class Work>
KOKKOS_INLINE_FUNCTION void gam_one_lane(const Member& member, const Work& work) {
#if defined(__CUDA_ARCH__)
  const unsigned lanes = blockDim.x;
  __syncwarp(lanes == 32 ? 0xffffffffu
                         : ((1u << lanes) - 1) << (threadIdx.y % (32 / lanes)) * lanes);
#endif
  Kokkos::single(Kokkos::PerThread(member), work);
}

// work() by one lane of the whole team.
template <class Member, class Work>
KOKKOS_INLINE_FUNCTION void gam_one_of_team(const Member& member, const Work& work) {
  if (member.team_rank() == 0) gam_one_lane(member, work);
}

// sum - a b, rounded after the product and again after the difference (no
// fused multiply-add): the host's arithmetic, so that the same order of
// operations gives the host's bits.
KOKKOS_INLINE_FUNCTION double gam_minus_product(double sum, double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(sum, __dmul_rn(a, b));
#else
  const volatile double product = a * b;  // not contracted with the difference
  return sum - product;
#endif
}

// work(i) for each i in [begin, end), spread over the team's threads first
// and their lanes second: thread t's lanes take t, t + T, t + 2T, ... (T
// threads), so that the few rows or columns of a step run side by side, and
// on GPUs at most two lanes of a warp meet in a bank when they walk rows k
// apart.
template <class Member, class Work>
KOKKOS_INLINE_FUNCTION void gam_team_lanes_for(const Member& member, int begin, int end,
                                               const Work& work) {
  const int threads = member.team_size();
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, threads), [&](const int t) {
    const int count = end - begin > t ? (end - begin - t + threads - 1) / threads : 0;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, count),
                         [&](const int l) { work(begin + t + l * threads); });
  });
}

// L (row-major, lower triangle) with L L^T = A, A's entries from entry(i,
// j); false, on every thread alike, when A is not numerically positive
// definite (the host's test). A's lower triangle is first copied into
// lower, and its diagonal into diagonal (k values), so that the chain of
// columns reads the team's scratch, not global memory. Left-looking, the
// host's cholesky step for step: column j's pivot from row j, computed by
// every lane, and each row below it by a lane of its own
// (gam_team_lanes_for), each sum in index order as the host adds it, so L
// has the host's bits. A column is then one chain of j dependent
// operations, not one per row a thread holds.
template <class Member, class Entry>
KOKKOS_INLINE_FUNCTION bool gam_team_cholesky(const Member& member, int k, const Entry& entry,
                                              double* lower, double* diagonal) {
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k * k), [&](const int e) {
    const int i = e / k, j = e % k;
    if (j <= i) lower[e] = entry(i, j);
    if (j == i) diagonal[i] = lower[e];
  });
  member.team_barrier();
  double largest_diagonal = 0;
  for (int i = 0; i < k; ++i) largest_diagonal = gam_math::fmax(largest_diagonal, diagonal[i]);
  for (int j = 0; j < k; ++j) {
    const double* row_j = lower + j * k;
    double pivot_square = diagonal[j];
    for (int p = 0; p < j; ++p) pivot_square = gam_minus_product(pivot_square, row_j[p], row_j[p]);
    if (!(pivot_square > 1e-14 * largest_diagonal)) return false;
    const double pivot = gam_math::sqrt(pivot_square);
    gam_team_lanes_for(member, j + 1, k, [&](const int i) {
      double* row_i = lower + i * k;
      double sum = row_i[j];
      for (int p = 0; p < j; ++p) sum = gam_minus_product(sum, row_i[p], row_j[p]);
      row_i[j] = sum / pivot;
    });
    gam_one_of_team(member, [&] { lower[j * k + j] = pivot; });
    member.team_barrier();
  }
  return true;
}

// The position of values[i] among count values in falling order, ties in
// index order (a stable sort by ranks: each thread places its own).
template <class Member>
KOKKOS_INLINE_FUNCTION void gam_team_order_falling(const Member& member, int count,
                                                   const double* values, int* order) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, count), [&](const int i) {
    const double value = values[i];
    const int position = gam_lanes_sum<Member, int>(member, count, [&](int j) {
      return values[j] > value || (values[j] == value && j < i) ? 1 : 0;
    });
    gam_one_lane(member, [&] { order[position] = i; });
  });
  member.team_barrier();
}

// What the teams write: lambda, df and status for each learner ([p]), M and
// R in its blocks of inverse and reduction ([p k k]).
template <class Memory>
struct GamPenaltyOutputs {
  Kokkos::View<double*, Memory> lambda, df;
  Kokkos::View<int*, Memory> status;
  Kokkos::View<double*, Memory> inverse, reduction;
};

// One team per learner. Scratch: three k x k matrices, three k-vectors, k
// indices and the lambda search's verdicts.
template <class ExecutionSpace>
struct GamTeamPenalties {
  using Memory = typename ExecutionSpace::memory_space;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Member = typename Policy::member_type;
  using ConstValues = Kokkos::View<const double*, Memory>;
  using ScratchValues =
      Kokkos::View<double*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  using ScratchIndices =
      Kokkos::View<int*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  ConstValues gram;     // [p k k]
  ConstValues penalty;  // [k k]
  ConstValues factor;   // [k k]: F (K = F F^T), columns from problem.rank on zero
  GamPenaltyProblem problem;
  GamPenaltyOutputs<Memory> outputs;
  int scratch_level = 0;

  static std::size_t scratch_bytes(int k, int team_size) {
    const std::size_t square = static_cast<std::size_t>(k) * k;
    return 3 * ScratchValues::shmem_size(square) + 3 * ScratchValues::shmem_size(k) +
           ScratchIndices::shmem_size(k) + ScratchIndices::shmem_size(2 * team_size);
  }

  // Team-wide buffers; a matrix is row-major unless said otherwise.
  struct Workspace {
    double *lower, *work, *matrix;          // k x k each
    double *sizes, *squares, *eigenvalues;  // k each
    int* order;
    int* below;  // 2 x team size: the lambda search's verdicts, two rounds' worth
  };

  KOKKOS_FUNCTION void operator()(const Member& member) const {
    const int k = problem.k;
    const std::size_t square = static_cast<std::size_t>(k) * k;
    const auto scratch = [&](std::size_t count) {
      return ScratchValues(member.team_scratch(scratch_level), count).data();
    };
    Workspace space;
    space.lower = scratch(square);
    space.work = scratch(square);
    space.matrix = scratch(square);
    space.sizes = scratch(k);
    space.squares = scratch(k);
    space.eigenvalues = scratch(k);
    space.order = ScratchIndices(member.team_scratch(scratch_level), k).data();
    space.below = ScratchIndices(member.team_scratch(scratch_level), 2 * member.team_size()).data();
    const int learner = member.league_rank();
    const double* gram_j = gram.data() + learner * square;
    double lambda_j = 0, df_j = k;
    const bool done = eigenvalues(member, gram_j, space) &&
                      lambda_for_df(member, space, lambda_j, df_j) &&
                      smoother_matrices(member, gram_j, lambda_j, space, learner);
    gam_one_of_team(member, [&] {
      outputs.status(learner) = done ? gam_penalty_done : gam_penalty_for_the_host;
      outputs.lambda(learner) = lambda_j;
      outputs.df(learner) = df_j;
    });
  }

  // The Demmler-Reinsch eigenvalues, falling, into space.eigenvalues: the
  // squared singular values of L^-1 F with L L^T = G + 1e-9 K
  // (demmler_reinsch_eigenvalues). False where rank(B) < k or a step fails.
  KOKKOS_FUNCTION bool eigenvalues(const Member& member, const double* gram_j,
                                   const Workspace& space) const {
    const int k = problem.k, rank = problem.rank;
    // rank(B) = k exactly where G has a Cholesky factor (gram_rank).
    if (!gam_team_cholesky(
            member, k, [&](int i, int j) { return gram_j[i * k + j]; }, space.lower, space.sizes))
      return false;
    if (!gam_team_cholesky(
            member, k, [&](int i, int j) { return gram_j[i * k + j] + 1e-9 * penalty(i * k + j); },
            space.lower, space.sizes))
      return false;
    // W = L^-1 F by forward substitution, a lane a column (W's column c at
    // work[c k]), each sum in the host's order (solve_lower).
    double* columns = space.work;
    gam_team_lanes_for(member, 0, rank, [&](const int c) {
      double* column = columns + c * k;
      for (int i = 0; i < k; ++i) {
        const double* row_i = space.lower + i * k;
        double sum = factor(i * k + c);
        for (int p = 0; p < i; ++p) sum = gam_minus_product(sum, row_i[p], column[p]);
        column[i] = sum / row_i[i];
      }
    });
    member.team_barrier();
    // W's rows in falling order of size (squared_singular_values).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](const int i) {
      const double size = gam_lanes_sum(
          member, rank, [&](int a) { return columns[a * k + i] * columns[a * k + i]; });
      gam_one_lane(member, [&] { space.sizes[i] = size; });
    });
    member.team_barrier();
    for (int i = 0; i < k; ++i)
      if (!gam_math::isfinite(space.sizes[i])) return false;
    gam_team_order_falling(member, k, space.sizes, space.order);
    double* reordered = space.matrix;  // k x rank by columns
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, rank), [&](const int a) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, k), [&](const int i) {
        reordered[a * k + i] = columns[a * k + space.order[i]];
      });
    });
    member.team_barrier();
    pivoted_qr(member, reordered, space.sizes);
    // R^T's columns (R's rows) for Jacobi, rank x rank by columns.
    double* rows = space.work;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, rank), [&](const int a) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, rank), [&](const int j) {
        rows[a * rank + j] = j >= a ? reordered[j * k + a] : 0.0;
      });
    });
    member.team_barrier();
    if (!jacobi(member, rows, space.squares)) return false;
    // The squares and K's null space (zeros), falling.
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k),
                         [&](const int i) { space.sizes[i] = i < rank ? space.squares[i] : 0.0; });
    member.team_barrier();
    gam_team_order_falling(member, k, space.sizes, space.order);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k), [&](const int position) {
      space.eigenvalues[position] = space.sizes[space.order[position]];
    });
    member.team_barrier();
    return true;
  }

  // Householder QR with column pivoting of the k x rank matrix a (by
  // columns), in place: R in its upper triangle (pivoted_triangle_rows).
  // norms: k scratch values.
  KOKKOS_FUNCTION void pivoted_qr(const Member& member, double* a, double* norms) const {
    const int k = problem.k, columns = problem.rank;
    for (int i = 0; i < columns; ++i) {
      const int length = k - i;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, i, columns), [&](const int j) {
        const double* y = a + j * k + i;
        const double norm = gam_lanes_sum(member, length, [&](int r) { return y[r] * y[r]; });
        gam_one_lane(member, [&] { norms[j] = norm; });
      });
      member.team_barrier();
      int pivot = i;
      double largest = -1;
      for (int j = i; j < columns; ++j)
        if (norms[j] > largest) largest = norms[j], pivot = j;
      if (pivot != i) {
        Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k), [&](const int r) {
          const double kept = a[i * k + r];
          a[i * k + r] = a[pivot * k + r];
          a[pivot * k + r] = kept;
        });
        member.team_barrier();
      }
      const double* x = a + i * k + i;
      const double norm = gam_math::sqrt(largest);
      if (norm > 0) {
        // v = x - alpha e_1 (alpha = -sign(x_0) |x|); H = I - 2 v v^T / v^T v.
        const double alpha = x[0] >= 0 ? -norm : norm;
        const double head = x[0] - alpha;
        const double scale = 1 / (norm * gam_math::fabs(head));  // 2 / v^T v
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, i + 1, columns), [&](const int j) {
          double* y = a + j * k + i;
          // y[0] read before the lanes' sum, which orders it before any
          // lane's update below.
          const double first = y[0];
          const double product = head * first + gam_lanes_sum(member, length - 1, [&](int r) {
                                   return x[r + 1] * y[r + 1];
                                 });
          const double factor = product * scale;
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, length),
                               [&](const int r) { y[r] -= factor * (r == 0 ? head : x[r]); });
        });
        member.team_barrier();  // every thread has read x[0]
        gam_one_of_team(member, [&] { a[i * k + i] = alpha; });
      }
      member.team_barrier();  // every thread has read the norms
    }
  }

  // One-sided Jacobi on the rank x rank matrix x (by columns) in Brent &
  // Luk's round-robin order (jacobi_squared_norms): each round's disjoint
  // pairs on the team's threads. squares: the columns' squared norms.
  KOKKOS_FUNCTION bool jacobi(const Member& member, double* x, double* squares) const {
    const int columns = problem.rank, length = columns;
    const double tolerance = problem.jacobi_tolerance;
    const int seats = columns + columns % 2;
    // Seat 0 stays; the others move one place a round, and a sweep's seats - 1
    // rounds bring them back.
    const auto seated = [&](int seat, int round) {
      if (seat == 0) return 0;
      const int place = seat - 1 - round;  // in (-(seats - 1), seats - 1)
      return 1 + (place < 0 ? place + seats - 1 : place);
    };
    int rotations_before = -1;  // the last sweep's, once there was one
    for (int sweep = 0;; ++sweep) {
      if (sweep == 60) return false;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, columns), [&](const int a) {
        const double* column = x + a * length;
        const double norm =
            gam_lanes_sum(member, length, [&](int r) { return column[r] * column[r]; });
        gam_one_lane(member, [&] { squares[a] = norm; });
      });
      member.team_barrier();
      // After a sweep of few rotations this one may find none: every pair is
      // first tested at once (pairs_to_rotate), and the sweep is run only
      // where one would rotate.
      if (rotations_before >= 0 && rotations_before <= columns &&
          pairs_to_rotate(member, x, squares) == 0)
        return true;
      int rotations = 0;
      for (int round = 0; round + 1 < seats; ++round) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, seats / 2), [&](const int q) {
          const int a = seated(q, round), b = seated(seats - 1 - q, round);
          if (a >= columns || b >= columns) return;
          double* left = x + (a < b ? a : b) * length;
          double* right = x + (a < b ? b : a) * length;
          double& alpha = squares[a < b ? a : b];
          double& beta = squares[a < b ? b : a];
          // The squares read before the lanes' sum, which orders the reads
          // before the update of one lane below.
          const double alpha_before = alpha, beta_before = beta;
          const double gamma =
              gam_lanes_sum(member, length, [&](int r) { return left[r] * right[r]; });
          if (alpha_before == 0 || beta_before == 0 ||
              gam_math::fabs(gamma) <= tolerance * gam_math::sqrt(alpha_before * beta_before))
            return;
          const JacobiRotation rotation = jacobi_rotation(alpha_before, beta_before, gamma);
          const double c = rotation.c, s = rotation.s, t = rotation.t;
          ++rotations;
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, length), [&](const int r) {
            const double u = left[r], v = right[r];
            left[r] = c * u - s * v;
            right[r] = s * u + c * v;
          });
          gam_one_lane(member, [&] {
            alpha = alpha_before - t * gamma;
            beta = beta_before + t * gamma;
          });
        });
        member.team_barrier();
      }
      int team_rotations = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(member, member.team_size()),
          [&](int, int& sum) { sum += rotations; }, team_rotations);
      if (team_rotations == 0) return true;
      rotations_before = team_rotations;
    }
  }

  // How many pairs of x's columns one-sided Jacobi would rotate, all tested
  // at once as a sweep tests them one at a time (the same sums, the same
  // bits). A sweep that rotates none leaves x and the squares as they are,
  // so it tests each pair on the values tested here: this count is 0
  // exactly where that sweep would find no rotation.
  KOKKOS_FUNCTION int pairs_to_rotate(const Member& member, const double* x,
                                      const double* squares) const {
    const int columns = problem.rank, length = columns;
    const double tolerance = problem.jacobi_tolerance;
    int count = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, columns * (columns - 1) / 2),
        [&](const int pair, int& partial) {
          int a = 0, rest = pair;  // pair = (a, b), a < b, in row order
          while (rest >= columns - 1 - a) rest -= columns - 1 - a++;
          const int b = a + 1 + rest;
          const double* left = x + a * length;
          const double* right = x + b * length;
          const double alpha = squares[a], beta = squares[b];
          const double gamma =
              gam_lanes_sum(member, length, [&](int r) { return left[r] * right[r]; });
          if (!(alpha == 0 || beta == 0 ||
                gam_math::fabs(gamma) <= tolerance * gam_math::sqrt(alpha * beta)))
            ++partial;
        },
        count);
    return count;
  }

  // lambda with df(lambda) = the target (lambda_for_df's root, to the last
  // bits), by multisection: each of the team's T threads evaluates df at
  // one of T points at once, and the team keeps the interval between the
  // last point still below the root and the first beyond it. The bracket:
  // the first power of two 2^m, m < 50, whose df reaches the target, T
  // powers a step (the host doubles from 1 and stops past 1e15); then T + 1
  // equal parts a step, until no point falls inside the interval or it is
  // 1e-16 of its end wide. With T = 1 it is the host's bisection. False
  // where no power reaches the target.
  KOKKOS_FUNCTION bool lambda_for_df(const Member& member, const Workspace& space, double& lambda_j,
                                     double& df_j) const {
    const int k = problem.k;
    const bool trace = problem.definition == DfDefinition::trace;
    const auto degrees_of_freedom = [&](double at) {
      return gam_lanes_sum(member, k, [&](int i) {
        const double shrink = 1 / (1 + at * space.eigenvalues[i]);
        return trace ? shrink : 2 * shrink - shrink * shrink;
      });
    };
    if (problem.target_df >= k) {  // rank(B) = k here
      lambda_j = 0;
      df_j = k;
      return true;
    }
    const int points = member.team_size(), point = member.team_rank();
    constexpr int last_power = 49;  // 2^50 > 1e15
    const auto power_of_two = [](int exponent) {
      double power = 1;
      for (int e = 0; e < exponent; ++e) power *= 2;
      return power;
    };
    // below[t] of the current round (its half of space.below): the point is
    // below the root (df above the target).
    int round = 0;
    const auto verdicts = [&](const auto& position) {
      int* below = space.below + (round++ % 2) * points;
      const double at = position(point);
      const int verdict = degrees_of_freedom(at) > problem.target_df ? 1 : 0;
      gam_one_lane(member, [&] { below[point] = verdict; });
      member.team_barrier();  // the other half may be rewritten after it
      int first = 0;
      while (first < points && below[first]) ++first;
      return first;  // the first point beyond the root; points if none
    };
    double low = 0, high = 0;
    for (int step = 0;; ++step) {
      const int first_power = step * points;
      if (first_power > last_power) return false;
      const int first = verdicts([&](int t) {
        return power_of_two(first_power + t <= last_power ? first_power + t : last_power);
      });
      if (first < points && first_power + first <= last_power) {
        high = power_of_two(first_power + first);
        low = first_power + first == 0 ? 0.0 : 0.5 * high;
        break;
      }
    }
    for (int step = 0; step < 200 && high - low > 1e-16 * high; ++step) {
      const double width = high - low;
      const auto position = [&](int t) { return low + width * (double(t + 1) / (points + 1)); };
      bool inside = false;
      for (int t = 0; t < points; ++t) inside = inside || (position(t) > low && position(t) < high);
      if (!inside) break;  // the interval is a few ulps wide
      const int first = verdicts(position);
      const double new_low = first == 0 ? low : position(first - 1);
      high = first == points ? high : position(first);
      low = new_low;
    }
    lambda_j = 0.5 * (low + high);
    df_j = degrees_of_freedom(lambda_j);
    return true;
  }

  // M = (G + lambda K)^-1 = L^-T L^-1 and R = M + lambda M K M into the
  // learner's blocks of inverse and reduction (smoother_matrices).
  KOKKOS_FUNCTION bool smoother_matrices(const Member& member, const double* gram_j,
                                         double lambda_j, const Workspace& space,
                                         int learner) const {
    const int k = problem.k, band = problem.band;
    if (!gam_team_cholesky(
            member, k,
            [&](int i, int j) { return gram_j[i * k + j] + lambda_j * penalty(i * k + j); },
            space.lower, space.sizes))
      return false;
    // L^-1 by columns: column c at inverse_lower[c k], its rows from c on, a
    // lane a column, each sum in the host's order (invert_lower).
    double* inverse_lower = space.work;
    gam_team_lanes_for(member, 0, k, [&](const int c) {
      double* column = inverse_lower + c * k;
      for (int i = c; i < k; ++i) {
        const double* row_i = space.lower + i * k;
        double sum = i == c ? 1.0 : 0.0;
        for (int p = c; p < i; ++p) sum = gam_minus_product(sum, row_i[p], column[p]);
        column[i] = sum / row_i[i];
      }
    });
    member.team_barrier();
    const std::size_t square = static_cast<std::size_t>(k) * k;
    double* inverse_j = outputs.inverse.data() + learner * square;
    double* reduction_j = outputs.reduction.data() + learner * square;
    double* m = space.matrix;
    // M's (i, j) sums from row max(i, j) of L^-1; formed once and mirrored.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k * k), [&](const int e) {
      const int i = e / k, j = e % k;
      if (j < i) return;
      const double* column_i = inverse_lower + i * k;
      const double* column_j = inverse_lower + j * k;
      const double sum =
          gam_lanes_sum(member, k - j, [&](int p) { return column_i[j + p] * column_j[j + p]; });
      gam_one_lane(member, [&] {
        m[i * k + j] = m[j * k + i] = sum;
        inverse_j[i * k + j] = inverse_j[j * k + i] = sum;
      });
    });
    member.team_barrier();
    // M K from K's band, into the Cholesky factor's place (no longer read).
    double* mk = space.lower;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k * k), [&](const int e) {
      const int i = e / k, q = e % k;
      double sum = 0;
      for (int p = q - band < 0 ? 0 : q - band; p <= (q + band < k ? q + band : k - 1); ++p)
        sum += m[i * k + p] * penalty(p * k + q);
      mk[i * k + q] = sum;
    });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k * k), [&](const int e) {
      const int i = e / k, j = e % k;
      if (j < i) return;
      const double shrinkage =
          gam_lanes_sum(member, k, [&](int p) { return mk[i * k + p] * m[j * k + p]; });
      gam_one_lane(member, [&] {
        reduction_j[i * k + j] = reduction_j[j * k + i] = m[i * k + j] + lambda_j * shrinkage;
      });
    });
    return true;
  }
};

// K, its factor F and what the teams share, for basis size k.
struct GamPenaltyInputs {
  GamPenaltyProblem problem;
  std::vector<double> penalty, factor;  // k x k each
};
inline GamPenaltyInputs gam_penalty_inputs(int k, int differences, double target_df,
                                           DfDefinition definition) {
  GamPenaltyInputs inputs;
  inputs.penalty = difference_penalty(k, differences);
  inputs.problem.k = k;
  inputs.problem.rank = semidefinite_factor(inputs.penalty, k, inputs.factor);
  for (int p = 0; p < k; ++p)
    for (int q = 0; q < k; ++q)
      if (inputs.penalty[p * k + q] != 0)
        inputs.problem.band = std::max(inputs.problem.band, std::abs(p - q));
  inputs.problem.target_df = target_df;
  inputs.problem.definition = definition;
  inputs.problem.jacobi_tolerance = k * std::numeric_limits<double>::epsilon();
  return inputs;
}

// One team per learner of gram ([p k k]) writes its outputs. team_size and
// vector_length 0: the execution space's own (GPUs: a warp's lanes, a thread
// for each pair of Jacobi's columns up to 16; CPUs: one thread).
// Asynchronous.
template <class ExecutionSpace>
void gam_penalties_on_device(
    const ExecutionSpace& space, const GamPenaltyInputs& inputs,
    const typename GamTeamPenalties<ExecutionSpace>::ConstValues& gram,
    const GamPenaltyOutputs<typename ExecutionSpace::memory_space>& outputs, int team_size = 0,
    int vector_length = 0) {
  using Functor = GamTeamPenalties<ExecutionSpace>;
  using Memory = typename Functor::Memory;
  const int k = inputs.problem.k;
  const auto upload = [&](const std::vector<double>& values, const char* label) {
    Kokkos::View<double*, Memory> device(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string(label)), values.size());
    Kokkos::deep_copy(space, device,
                      Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                          values.data(), values.size()));
    return device;
  };
  Functor functor;
  functor.outputs = outputs;
  functor.gram = gram;
  functor.penalty = upload(inputs.penalty, "kpl::gam::penalty");
  functor.factor = upload(inputs.factor, "kpl::gam::penalty_factor");
  functor.problem = inputs.problem;
  const bool on_host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Memory>::accessible;
  if (vector_length == 0) vector_length = on_host ? 1 : 32;
  if (team_size == 0) team_size = on_host ? 1 : std::min(16, std::max(1, (k + 1) / 2));
  const std::size_t bytes = Functor::scratch_bytes(k, team_size);
  functor.scratch_level =
      bytes <= static_cast<std::size_t>(Functor::Policy::scratch_size_max(0)) ? 0 : 1;
  const std::int64_t learners = outputs.status.extent(0);
  auto policy = typename Functor::Policy(space, learners, 1, vector_length)
                    .set_scratch_size(functor.scratch_level, Kokkos::PerTeam(bytes));
  team_size = std::min(team_size, policy.team_size_max(functor, Kokkos::ParallelForTag()));
  Kokkos::parallel_for("kpl::gam::penalties",
                       typename Functor::Policy(space, learners, team_size, vector_length)
                           .set_scratch_size(functor.scratch_level, Kokkos::PerTeam(bytes)),
                       functor);
}

}  // namespace impl
}  // namespace kpl
