// Penalised least squares for one base-learner of a boosted GAM: the
// smoothing parameter from degrees of freedom (Sieminski & Lee 2023,
// Appendix A, Algorithm 1; mboost's df2lambda) and the matrices each boosting
// iteration needs. Host code in double: one k x k problem per learner, done
// once per fit (a fit on a GPU runs the same steps there, one team per
// learner: kpl/impl/gam_penalise_on_device.hpp).
//
// With G = B^T W B (k x k) and the penalty K, a learner's fit to u is
// gamma = (G + lambda K)^-1 B^T W u = M c, and its smoother S = B M B^T W.
// In the Demmler-Reinsch basis (Ruppert, Wand & Carroll 2003, App. B.1.1;
// G + 1e-9 K = L L^T, d = eigenvalues of L^-1 K L^-T):
//   trace(S)          = sum_i 1 / (1 + lambda d_i)            (the seed's df)
//   trace(2S - S^T S) = sum_i 2 / (1 + lambda d_i) - 1 / (1 + lambda d_i)^2
//                                                           (mboost's default)
// Both fall from rank(B) at lambda = 0 to the penalty's null-space dimension
// as lambda grows; lambda solves df(lambda) = omega by bisection to full
// double precision (mboost's uniroot stops at 1.5e-8 absolute in lambda).
#pragma once

#include <string>
#include <vector>

namespace kpl {

enum class DfDefinition {
  trace,         // trace(S): Sieminski & Lee's definition
  trace_2s_sts,  // trace(2S - S^T S): mboost's default (options(mboost_dftraceS = FALSE))
};

inline std::string to_string(DfDefinition definition) {
  return definition == DfDefinition::trace ? "trace" : "trace2";
}

// The generalised eigenvalues d_i of the penalty against G (k values,
// descending), as mboost's df2lambda computes them. G and K: row-major k x k.
std::vector<double> demmler_reinsch_eigenvalues(const std::vector<double>& gram,
                                                const std::vector<double>& penalty, int k);

// F (k x k, row-major; the columns from the returned rank on are zero) with
// F F^T = K for the positive semidefinite K, by Cholesky with diagonal
// pivoting (Higham, Accuracy and Stability, §10.3), stopping where the
// largest remaining diagonal falls below k eps of the largest one.
int semidefinite_factor(const std::vector<double>& penalty, int k, std::vector<double>& factor);

double degrees_of_freedom(const std::vector<double>& eigenvalues, double lambda,
                          DfDefinition definition);

// The eigenvalues of a symmetric k x k matrix (row-major), descending
// (Householder tridiagonalisation and implicit QL).
std::vector<double> symmetric_eigenvalues(std::vector<double> matrix, int k);

struct LearnerPenalty {
  double lambda = 0;
  double df = 0;                // df(lambda), = the target unless lambda = 0
  std::vector<double> inverse;  // M = (G + lambda K)^-1, row-major k x k
  // R = M (G + 2 lambda K) M: a learner's residual sum of squares is
  // u^T W u - c^T R c with c = B^T W u, so the best learner has the largest
  // c^T R c and no fit is formed for the others.
  std::vector<double> reduction;
};

// lambda for df = target, M and R. `unpenalised` is the dimension of the
// penalty's null space (the difference order: those functions are never
// shrunk, so df(lambda) > unpenalised for every lambda). Throws
// std::invalid_argument naming `learner` when the target is outside
// (unpenalised, k] or G + lambda K is singular (a covariate with too few
// distinct values for k functions).
LearnerPenalty penalise_learner(const std::vector<double>& gram, const std::vector<double>& penalty,
                                int k, double target_df, DfDefinition definition,
                                const std::string& learner, int unpenalised = 0);

}  // namespace kpl
