// kpl::team::gemv, kpl::team::reduce and kpl::team::nnls called from a
// user-style kernel (a TeamPolicy lambda written here, one team per
// problem) on every backend, against plain host references written here:
// gemv and reduce by direct loops in double, nnls by the KKT conditions
// (kkt_reference.hpp). Teams of more than one thread where the backend
// allows (on the host too), team sizes that do not divide the problem,
// n = 1, m < n, float and double, data in global memory and in scratch.
#include "execution_space_test.hpp"
#include "kkt_reference.hpp"

#include <kpl/team.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

using kpl::Transpose;

// Threads a team: 3 where the backend allows (it divides none of the sizes
// below but 3 x 3), else what it allows; and the vector lengths to try.
template <class Space, class Functor>
int team_threads(const Functor& functor, int lanes) {
  const int largest = Kokkos::TeamPolicy<Space>(Space{}, 1, 1, lanes)
                          .team_size_max(functor, Kokkos::ParallelForTag());
  return std::min(3, largest);
}

template <class Space>
std::vector<int> lane_counts() {
  const int largest = int(Kokkos::TeamPolicy<Space>::vector_length_max());
  std::vector<int> counts = {1};
  if (largest >= 8) counts.push_back(8);
  if (largest > 8) counts.push_back(largest);
  return counts;
}

double uniform(std::mt19937_64& generator, double low, double high) {
  return std::uniform_real_distribution<double>(low, high)(generator);
}

// ------------------------------------------------------------------ gemv

// y_s = alpha op(A_s) x_s + beta y_s for every s, one team per s; with
// x_in_scratch the team first copies x_s into level-0 scratch (barrier, then
// the call reads it from there).
template <class Space, class T, class Layout>
struct UserGemv {
  using Member = typename Kokkos::TeamPolicy<Space>::member_type;
  using Memory = typename Space::memory_space;
  using ScratchVector = Kokkos::View<T*, typename Space::scratch_memory_space,
                                     Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Kokkos::View<T***, Layout, Memory> A;
  Kokkos::View<T**, Layout, Memory> x;
  Kokkos::View<T**, Layout, Memory> y;
  Transpose transpose;
  T alpha, beta;
  bool x_in_scratch;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int s = member.league_rank();
    const auto A_s = Kokkos::subview(A, s, Kokkos::ALL, Kokkos::ALL);
    const auto x_s = Kokkos::subview(x, s, Kokkos::ALL);
    const auto y_s = Kokkos::subview(y, s, Kokkos::ALL);
    if (x_in_scratch) {
      const ScratchVector copy(member.team_scratch(0), x.extent(1));
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, int(x.extent(1))),
                           [&](int j) { copy(j) = x_s(j); });
      member.team_barrier();
      kpl::team::gemv(member, transpose, alpha, A_s, copy, beta, y_s);
    } else {
      kpl::team::gemv(member, transpose, alpha, A_s, x_s, beta, y_s);
    }
  }
};

template <class Space, class T, class Layout>
void check_gemv(std::int64_t m, std::int64_t n, Transpose transpose, T alpha, T beta,
                bool x_in_scratch) {
  using Memory = typename Space::memory_space;
  const std::int64_t systems = 4;
  const bool normal = transpose == Transpose::no;
  const std::int64_t outputs = normal ? m : n, length = normal ? n : m;
  std::mt19937_64 generator(17 * m + n);
  Kokkos::View<T***, Layout, Memory> A("A", systems, m, n);
  Kokkos::View<T**, Layout, Memory> x("x", systems, length), y("y", systems, outputs);
  auto A_host = Kokkos::create_mirror_view(A);
  auto x_host = Kokkos::create_mirror_view(x);
  auto y_host = Kokkos::create_mirror(y);  // a copy: y is overwritten
  for (std::int64_t s = 0; s < systems; ++s) {
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) A_host(s, i, j) = T(uniform(generator, -1, 1));
    for (std::int64_t j = 0; j < length; ++j) x_host(s, j) = T(uniform(generator, -1, 1));
    // beta = 0: y is not read, so a NaN there must not show.
    for (std::int64_t i = 0; i < outputs; ++i)
      y_host(s, i) =
          beta == T(0) ? std::numeric_limits<T>::quiet_NaN() : T(uniform(generator, -1, 1));
  }
  Kokkos::deep_copy(A, A_host);
  Kokkos::deep_copy(x, x_host);
  Kokkos::deep_copy(y, y_host);
  // The reference, in double from the same (rounded) values.
  std::vector<double> expected(std::size_t(systems * outputs));
  for (std::int64_t s = 0; s < systems; ++s)
    for (std::int64_t r = 0; r < outputs; ++r) {
      double dot = 0;
      for (std::int64_t c = 0; c < length; ++c)
        dot += double(normal ? A_host(s, r, c) : A_host(s, c, r)) * double(x_host(s, c));
      expected[s * outputs + r] =
          double(alpha) * dot + (beta == T(0) ? 0.0 : double(beta) * double(y_host(s, r)));
    }
  for (const int lanes : lane_counts<Space>()) {
    Kokkos::deep_copy(y, y_host);
    const UserGemv<Space, T, Layout> functor{A, x, y, transpose, alpha, beta, x_in_scratch};
    Kokkos::TeamPolicy<Space> policy(Space{}, int(systems), team_threads<Space>(functor, lanes),
                                     lanes);
    if (x_in_scratch)
      policy.set_scratch_size(
          0, Kokkos::PerTeam(UserGemv<Space, T, Layout>::ScratchVector::shmem_size(length)));
    Kokkos::parallel_for("kpl::test::user_gemv", policy, functor);
    const auto result = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, y);
    const double tolerance = 8 * double(std::numeric_limits<T>::epsilon()) * double(length + 2);
    for (std::int64_t s = 0; s < systems; ++s)
      for (std::int64_t r = 0; r < outputs; ++r)
        ASSERT_NEAR(double(result(s, r)), expected[s * outputs + r], tolerance)
            << "m " << m << " n " << n << (normal ? " N" : " T") << " lanes " << lanes << " team "
            << policy.team_size() << " system " << s << " output " << r;
  }
}

template <class Space, class T>
void check_gemv_shapes() {
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {1, 1}, {1, 7}, {7, 1}, {3, 3}, {5, 3}, {3, 5}, {37, 29}, {64, 130}};
  for (const auto& [m, n] : shapes)
    for (const Transpose transpose : {Transpose::no, Transpose::yes}) {
      check_gemv<Space, T, Kokkos::LayoutRight>(m, n, transpose, T(1.5), T(0), false);
      check_gemv<Space, T, Kokkos::LayoutLeft>(m, n, transpose, T(-0.75), T(0.5), false);
      check_gemv<Space, T, Kokkos::LayoutRight>(m, n, transpose, T(2), T(-1), true);
    }
  // alpha = 0: y = beta y, A and x not read.
  check_gemv<Space, T, Kokkos::LayoutRight>(5, 4, Transpose::no, T(0), T(0.5), false);
  check_gemv<Space, T, Kokkos::LayoutRight>(5, 4, Transpose::yes, T(0), T(0), false);
}

// ---------------------------------------------------------------- reduce

// Each team reduces row s of `values` with kpl::team::reduce (a View: the
// row, contiguous for LayoutRight, strided for LayoutLeft) and with the
// element form (|values(s, i) - 1|), every thread writing what it got.
template <class Space, class T, class Layout>
struct UserReduce {
  using Member = typename Kokkos::TeamPolicy<Space>::member_type;
  using Memory = typename Space::memory_space;
  Kokkos::View<T**, Layout, Memory> values;
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> sums;          // [team, thread]
  Kokkos::View<T**, Kokkos::LayoutRight, Memory> maxima;             // [team, thread]
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, Memory> argmin;  // [team, thread]
  Kokkos::View<T**, Kokkos::LayoutRight, Memory> distance_max;       // [team, thread]

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int s = member.league_rank(), t = member.team_rank();
    const auto row = Kokkos::subview(values, s, Kokkos::ALL);
    const auto sum = kpl::team::reduce(member, row, kpl::Sum<T>{});
    const T largest = kpl::team::reduce(member, row, kpl::Max<T>{});
    const auto smallest = kpl::team::reduce(member, row, kpl::ArgMin<T>{});
    const T distance =
        kpl::team::reduce(member, std::int64_t(row.extent(0)), kpl::Max<T>{}, [&](std::int64_t i) {
          const T d = row(i) - T(1);
          return d < T(0) ? -d : d;
        });
    Kokkos::single(Kokkos::PerThread(member), [&] {
      sums(s, t) = double(sum);
      maxima(s, t) = largest;
      argmin(s, t) = smallest.index;
      distance_max(s, t) = distance;
    });
  }
};

template <class Space, class T, class Layout>
void check_reduce(std::int64_t length) {
  using Memory = typename Space::memory_space;
  const std::int64_t teams = 5;
  std::mt19937_64 generator(length + 3);
  Kokkos::View<T**, Layout, Memory> values("values", teams, length);
  auto host = Kokkos::create_mirror_view(values);
  for (std::int64_t s = 0; s < teams; ++s)
    for (std::int64_t i = 0; i < length; ++i) host(s, i) = T(uniform(generator, -100, 100));
  if (length > 4) host(1, length / 2) = host(1, 2);  // a tie: the lower index wins
  Kokkos::deep_copy(values, host);
  for (const int lanes : lane_counts<Space>()) {
    UserReduce<Space, T, Layout> functor{values, {}, {}, {}, {}};
    const int threads = team_threads<Space>(functor, lanes);
    functor.sums = decltype(functor.sums)("sums", teams, threads);
    functor.maxima = decltype(functor.maxima)("maxima", teams, threads);
    functor.argmin = decltype(functor.argmin)("argmin", teams, threads);
    functor.distance_max = decltype(functor.distance_max)("distance", teams, threads);
    Kokkos::parallel_for("kpl::test::user_reduce",
                         Kokkos::TeamPolicy<Space>(Space{}, int(teams), threads, lanes), functor);
    const auto sums = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, functor.sums);
    const auto maxima = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, functor.maxima);
    const auto argmin = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, functor.argmin);
    const auto distance =
        Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, functor.distance_max);
    for (std::int64_t s = 0; s < teams; ++s) {
      double sum = 0, magnitude = 0, largest = -std::numeric_limits<double>::infinity();
      double far = -std::numeric_limits<double>::infinity();
      std::int64_t smallest = -1;
      for (std::int64_t i = 0; i < length; ++i) {
        const double v = double(host(s, i));
        sum += v;
        magnitude += std::fabs(v);
        largest = std::max(largest, v);
        far = std::max(far, double(std::fabs(host(s, i) - T(1))));
        if (smallest < 0 || v < double(host(s, smallest))) smallest = i;
      }
      // Every thread of the team holds the team's value.
      for (int t = 0; t < threads; ++t) {
        const auto where = ::testing::Message() << "length " << length << " lanes " << lanes
                                                << " team " << s << " thread " << t;
        EXPECT_NEAR(sums(s, t), sum, 1e-12 * magnitude) << where;
        EXPECT_EQ(double(maxima(s, t)), largest) << where;
        EXPECT_EQ(argmin(s, t), smallest) << where;
        EXPECT_EQ(double(distance(s, t)), far) << where;
      }
    }
  }
}

template <class Space, class T>
void check_reduce_lengths() {
  for (const std::int64_t length : {0, 1, 2, 7, 33, 1000, 4099}) {
    check_reduce<Space, T, Kokkos::LayoutRight>(length);
    check_reduce<Space, T, Kokkos::LayoutLeft>(length);
  }
}

// ------------------------------------------------------------------ nnls

// x_s = argmin ||A_s x - b_s|| s.t. x >= 0, one team per system; with
// b_in_scratch the team first copies b_s into level-0 scratch.
template <class Space, class T, class Layout>
struct UserNnls {
  using Member = typename Kokkos::TeamPolicy<Space>::member_type;
  using Memory = typename Space::memory_space;
  using ScratchVector = Kokkos::View<T*, typename Space::scratch_memory_space,
                                     Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  kpl::team::NnlsPlan<Space, T> plan;
  Kokkos::View<T***, Layout, Memory> A;
  Kokkos::View<T**, Layout, Memory> b;
  Kokkos::View<T**, Layout, Memory> x;
  Kokkos::View<int*, Memory> iterations;
  Kokkos::View<T*, Memory> residual_norm;
  Kokkos::View<int**, Kokkos::LayoutRight, Memory> status;  // [system, thread]
  Kokkos::View<T**, Kokkos::LayoutRight, Memory> x_sums;    // [system, thread]
  bool b_in_scratch;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int s = member.league_rank();
    const auto A_s = Kokkos::subview(A, s, Kokkos::ALL, Kokkos::ALL);
    const auto b_s = Kokkos::subview(b, s, Kokkos::ALL);
    const auto x_s = Kokkos::subview(x, s, Kokkos::ALL);
    kpl::team::NnlsResult<T> result;
    if (b_in_scratch) {
      const ScratchVector copy(member.team_scratch(0), b.extent(1));
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, int(b.extent(1))),
                           [&](int i) { copy(i) = b_s(i); });
      member.team_barrier();
      result = kpl::team::nnls(member, plan, A_s, copy, x_s, member.team_scratch(1));
    } else {
      result = kpl::team::nnls(member, plan, A_s, b_s, x_s, member.team_scratch(1));
    }
    // Every thread holds the result and sees all of x.
    T x_sum = T(0);
    for (std::int64_t j = 0; j < std::int64_t(x_s.extent(0)); ++j) x_sum += x_s(j);
    const int t = member.team_rank();
    Kokkos::single(Kokkos::PerThread(member), [&] {
      status(s, t) = result.status;
      x_sums(s, t) = x_sum;
    });
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      iterations(s) = result.iterations;
      residual_norm(s) = result.residual_norm;
    });
  }
};

template <class Space, class T, class Layout>
void check_nnls(std::int64_t m, std::int64_t n, bool b_in_scratch) {
  using Memory = typename Space::memory_space;
  const std::int64_t systems = 6;
  std::mt19937_64 generator(31 * m + n);
  Kokkos::View<T***, Layout, Memory> A("A", systems, m, n);
  Kokkos::View<T**, Layout, Memory> b("b", systems, m), x("x", systems, n);
  auto A_host = Kokkos::create_mirror_view(A);
  auto b_host = Kokkos::create_mirror_view(b);
  for (std::int64_t s = 0; s < systems; ++s) {
    // b = A x_true + noise with some x_true_j = 0, so that some columns stay
    // in the zero set and some constraints bind.
    std::vector<double> x_true(static_cast<std::size_t>(n));
    for (auto& value : x_true)
      value = uniform(generator, 0, 1) < 0.4 ? 0.0 : uniform(generator, 0, 2);
    for (std::int64_t i = 0; i < m; ++i) {
      double value = uniform(generator, -0.5, 0.5);
      for (std::int64_t j = 0; j < n; ++j) {
        A_host(s, i, j) = T(uniform(generator, -1, 1));
        value += double(A_host(s, i, j)) * x_true[j];
      }
      b_host(s, i) = T(value);
    }
  }
  Kokkos::deep_copy(A, A_host);
  Kokkos::deep_copy(b, b_host);
  const kpl::team::NnlsPlan<Space, T> plan(m, n);
  for (const int lanes : lane_counts<Space>()) {
    Kokkos::deep_copy(x, T(-1));
    using Functor = UserNnls<Space, T, Layout>;
    Functor functor{plan,
                    A,
                    b,
                    x,
                    Kokkos::View<int*, Memory>("iterations", systems),
                    Kokkos::View<T*, Memory>("residual_norm", systems),
                    {},
                    {},
                    b_in_scratch};
    const int threads = team_threads<Space>(functor, lanes);
    functor.status = decltype(functor.status)("status", systems, threads);
    functor.x_sums = decltype(functor.x_sums)("x_sums", systems, threads);
    Kokkos::TeamPolicy<Space> policy(Space{}, int(systems), threads, lanes);
    policy.set_scratch_size(1, Kokkos::PerTeam(plan.scratch_bytes()));
    if (b_in_scratch)
      policy.set_scratch_size(0, Kokkos::PerTeam(Functor::ScratchVector::shmem_size(m)));
    Kokkos::parallel_for("kpl::test::user_nnls", policy, functor);
    const auto x_result = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, x);
    const auto status = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, functor.status);
    const auto x_sums = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, functor.x_sums);
    const auto iterations =
        Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, functor.iterations);
    const auto residual_norm =
        Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, functor.residual_norm);
    for (std::int64_t s = 0; s < systems; ++s) {
      const auto where = ::testing::Message() << "m " << m << " n " << n << " lanes " << lanes
                                              << " team " << threads << " system " << s;
      ASSERT_EQ(status(s, 0), int(kpl::NnlsStatus::converged)) << where;
      EXPECT_LE(iterations(s), 3 * n) << where;  // the default cap
      T x_sum = T(0);
      for (std::int64_t j = 0; j < n; ++j) x_sum += x_result(s, j);
      for (int t = 0; t < threads; ++t) {
        EXPECT_EQ(status(s, t), status(s, 0)) << where << " thread " << t;
        EXPECT_EQ(x_sums(s, t), x_sum) << where << " thread " << t;
      }
      const auto a = [&](std::int64_t i, std::int64_t j) { return double(A_host(s, i, j)); };
      const auto rhs = [&](std::int64_t i) { return double(b_host(s, i)); };
      const auto solution = [&](std::int64_t j) { return double(x_result(s, j)); };
      EXPECT_LE(kpl::testing::kkt_residual(m, n, a, rhs, solution),
                kpl::testing::kkt_tolerance<T>(m, n))
          << where;
      // The reported ||A x - b||, against the host's.
      double squared = 0;
      for (std::int64_t i = 0; i < m; ++i) {
        double r = rhs(i);
        for (std::int64_t j = 0; j < n; ++j) r -= a(i, j) * solution(j);
        squared += r * r;
      }
      EXPECT_NEAR(double(residual_norm(s)), std::sqrt(squared),
                  100 * double(std::numeric_limits<T>::epsilon()) * (std::sqrt(squared) + 1))
          << where;
    }
  }
}

template <class Space, class T>
void check_nnls_shapes() {
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {1, 1}, {6, 1}, {1, 4}, {3, 7}, {20, 12}, {40, 40}, {61, 33}};
  for (const auto& [m, n] : shapes) {
    check_nnls<Space, T, Kokkos::LayoutRight>(m, n, false);
    check_nnls<Space, T, Kokkos::LayoutLeft>(m, n, true);
  }
}

}  // namespace

KPL_EXECUTION_SPACE_SUITE(TeamCallables);

KPL_EXECUTION_SPACE_TEST(TeamCallables, GemvInUserKernel) {
  check_gemv_shapes<TypeParam, double>();
  check_gemv_shapes<TypeParam, float>();
}

KPL_EXECUTION_SPACE_TEST(TeamCallables, ReduceInUserKernel) {
  check_reduce_lengths<TypeParam, double>();
  check_reduce_lengths<TypeParam, float>();
}

KPL_EXECUTION_SPACE_TEST(TeamCallables, NnlsInUserKernel) {
  check_nnls_shapes<TypeParam, double>();
  check_nnls_shapes<TypeParam, float>();
}

KPL_EXECUTION_SPACE_TEST(TeamCallables, NnlsPlanRejectsCrossProducts) {
  kpl::NnlsOptions options;
  options.gradient = kpl::NnlsGradient::from_cross_products;
  EXPECT_THROW((kpl::team::NnlsPlan<TypeParam, double>(4, 3, options)), std::invalid_argument);
  options.gradient = kpl::NnlsGradient::automatic;
  options.max_iterations = 0;
  EXPECT_THROW((kpl::team::NnlsPlan<TypeParam, double>(4, 3, options)), std::invalid_argument);
  // The scratch a plan asks for grows with the problem.
  EXPECT_GT((kpl::team::nnls_scratch_bytes<TypeParam, double>(40, 30)),
            (kpl::team::nnls_scratch_bytes<TypeParam, double>(4, 3)));
}
