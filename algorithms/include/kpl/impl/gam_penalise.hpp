// The GAM's penalties (kpl/gam.hpp, kpl/gam_penalty.hpp): lambda_j from the
// df, and M_j, R_j, for every learner from its B_j^T W B_j, on the host's
// threads (plain ones where Kokkos' host space is Serial), or on a GPU by
// kpl/impl/gam_penalise_on_device.hpp with the host taking the learners it
// leaves. Part of kpl/gam.hpp, included after its types.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/error.hpp>
#include <kpl/gam_penalty.hpp>
#include <kpl/impl/gam_penalise_on_device.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef __linux__
#include <sched.h>
#endif

namespace kpl {
namespace impl {

// The CPUs this process may run on: its affinity mask where the system has
// one (a launcher's binding, taskset, a cgroup's cpuset), else the hardware
// threads.
inline int gam_usable_cpus() {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
#ifdef __linux__
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0)
    return std::min(hardware, CPU_COUNT(&allowed));
#endif
  return hardware;
}

// Calls work(j) for j in [0, count) on the host's threads: Kokkos' host
// space where it has several (OpenMP), else plain threads on the CPUs this
// process may use. A Kokkos built for a GPU often has only Serial on the
// host, and a fit would then wait for p eigenproblems on one core while the
// others idle. Each thread takes the next j when it is done with one: the
// learners' times differ (Jacobi's sweeps), and a thread the system
// interrupts would otherwise hold up its whole share. work must not throw.
template <class Work>
void gam_for_each_on_host(std::int64_t count, const Work& work) {
  const int threads = static_cast<int>(std::min<std::int64_t>(count, gam_usable_cpus()));
  if (Kokkos::DefaultHostExecutionSpace().concurrency() > 1 || threads <= 1) {
    using Policy =
        Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::Schedule<Kokkos::Dynamic>>;
    Kokkos::parallel_for("kpl::gam::penalties", Policy(0, count).set_chunk_size(1), work);
    return;
  }
  std::atomic<std::int64_t> next{0};
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (std::int64_t j = next++; j < count; j = next++) work(j);
    });
  for (auto& worker : workers) worker.join();
}

// One k x k problem per learner; host_gram: [p k k] on the host. Throws
// kpl::input_error naming the first learner whose df no lambda reaches.
template <class HostGram>
std::vector<LearnerPenalty> gam_learner_penalties(const HostGram& host_gram,
                                                  const GamOptions& options,
                                                  std::int64_t learners) {
  const int k = options.basis_size;
  const std::int64_t block = static_cast<std::int64_t>(k) * k;
  const auto penalty = difference_penalty(k, options.differences);
  std::vector<LearnerPenalty> penalties(learners);
  std::vector<std::string> errors(learners);
  gam_for_each_on_host(learners, [&](const std::int64_t j) {
    try {
      std::vector<double> gram(block);
      for (std::int64_t e = 0; e < block; ++e) gram[e] = host_gram(j * block + e);
      penalties[j] = penalise_learner(gram, penalty, k, options.df, options.df_definition,
                                      "covariate " + std::to_string(j), options.differences);
    } catch (const std::exception& error) {
      errors[j] = error.what();
    }
  });
  for (const auto& error : errors)
    if (!error.empty()) throw input_error("kpl::fit_gam: " + error);
  return penalties;
}

// Copies every learner's M_j and R_j into inverse and reduction ([p k k]),
// its lambda and df into the model.
template <class ExecutionSpace, class Vector>
void gam_upload_penalties(const ExecutionSpace& space, const std::vector<LearnerPenalty>& penalties,
                          std::int64_t block, GamModel& model, const Vector& inverse,
                          const Vector& reduction) {
  const std::int64_t learners = penalties.size();
  // Host memory is written in place; a device's gets a host copy, not
  // initialised, as every value is written below.
  const auto host_copy = [](const Vector& values, const std::string& label) {
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                             typename Vector::memory_space>::accessible) {
      return values;
    } else {
      return Kokkos::View<typename Vector::non_const_value_type*, Kokkos::HostSpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, label), values.extent(0));
    }
  };
  const auto inverse_host = host_copy(inverse, "kpl::gam::inverse_host");
  const auto reduction_host = host_copy(reduction, "kpl::gam::reduction_host");
  model.lambda.resize(learners);
  model.df.resize(learners);
  for (std::int64_t j = 0; j < learners; ++j) {
    model.lambda[j] = penalties[j].lambda;
    model.df[j] = penalties[j].df;
    for (std::int64_t e = 0; e < block; ++e) {
      inverse_host(j * block + e) = penalties[j].inverse[e];
      reduction_host(j * block + e) = penalties[j].reduction[e];
    }
  }
  Kokkos::deep_copy(space, inverse, inverse_host);
  Kokkos::deep_copy(space, reduction, reduction_host);
  space.fence();
}

// Whether the device's teams can search for the options' df at all; the
// host's search says what is wrong with any other.
inline bool gam_penalties_fit_the_device(const GamOptions& options) {
  return options.df > 0 && options.df <= options.basis_size && options.df > options.differences;
}

// Learner j's lambda, df, M_j and R_j by penalise_learner on the host, from
// its block of gram where the fit runs, for a learner the device's teams
// left; kpl::input_error where no lambda suits it.
template <class ExecutionSpace, class Vector>
void gam_penalise_learner_on_host(const ExecutionSpace& space, const Vector& gram,
                                  const GamOptions& options, const GamPenaltyInputs& inputs,
                                  std::int64_t j, const Vector& inverse, const Vector& reduction,
                                  GamModel& model) {
  const int k = options.basis_size;
  const std::int64_t block = static_cast<std::int64_t>(k) * k;
  const auto range = std::make_pair(j * block, (j + 1) * block);
  std::vector<double> gram_j(block);
  Kokkos::deep_copy(
      space,
      Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(gram_j.data(), block),
      Kokkos::subview(gram, range));
  space.fence();
  LearnerPenalty penalty;
  try {
    penalty = penalise_learner(gram_j, inputs.penalty, k, options.df, options.df_definition,
                               "covariate " + std::to_string(j), options.differences);
  } catch (const std::exception& error) {
    throw input_error(std::string("kpl::fit_gam: ") + error.what());
  }
  model.lambda[j] = penalty.lambda;
  model.df[j] = penalty.df;
  using Unmanaged = Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  Kokkos::deep_copy(space, Kokkos::subview(inverse, range),
                    Unmanaged(penalty.inverse.data(), block));
  Kokkos::deep_copy(space, Kokkos::subview(reduction, range),
                    Unmanaged(penalty.reduction.data(), block));
  space.fence();
}

// lambda_j, df_j, M_j and R_j by the device's teams from gram ([p k k]
// where the fit runs); each learner they leave (gam_penalise_on_device.hpp)
// by the host, in learner order, so that the first of them that no lambda
// suits is the error, as on the host's path.
template <class ExecutionSpace, class Vector>
void gam_penalise_on_device(const ExecutionSpace& space, const Vector& gram,
                            const GamOptions& options, const Vector& inverse,
                            const Vector& reduction, GamModel& model) {
  using Memory = typename Vector::memory_space;
  const int k = options.basis_size;
  const std::int64_t learners = gram.extent(0) / (static_cast<std::int64_t>(k) * k);
  const auto uninitialised = [&](const char* label) {
    return Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string(label));
  };
  GamPenaltyOutputs<Memory> outputs;
  outputs.lambda = Kokkos::View<double*, Memory>(uninitialised("kpl::gam::lambda"), learners);
  outputs.df = Kokkos::View<double*, Memory>(uninitialised("kpl::gam::df"), learners);
  outputs.status = Kokkos::View<int*, Memory>(uninitialised("kpl::gam::penalty_status"), learners);
  outputs.inverse = inverse;
  outputs.reduction = reduction;
  const auto inputs = gam_penalty_inputs(k, options.differences, options.df, options.df_definition);
  gam_penalties_on_device(space, inputs, gram, outputs);
  model.lambda.resize(learners);
  model.df.resize(learners);
  std::vector<int> status(learners);
  const auto to_host = [&](auto* host, const auto& device) {
    using Value = typename std::decay_t<decltype(device)>::non_const_value_type;
    Kokkos::deep_copy(
        space, Kokkos::View<Value*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(host, learners),
        device);
  };
  to_host(model.lambda.data(), outputs.lambda);
  to_host(model.df.data(), outputs.df);
  to_host(status.data(), outputs.status);
  space.fence();
  for (std::int64_t j = 0; j < learners; ++j)
    if (status[j] != gam_penalty_done)
      gam_penalise_learner_on_host(space, gram, options, inputs, j, inverse, reduction, model);
}

}  // namespace impl
}  // namespace kpl
