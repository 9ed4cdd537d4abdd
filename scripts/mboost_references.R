# Reference fits by R's mboost for kpl's GAM: observation weights, a fixed
# offset, predict(type = "link" | "response"), varimp and cvrisk's bootstrap
# (issue 23). Writes tests/data/gam/mboost_*.h5 (tests/data/README.md lists
# them); mboost's semantics behind each number: the README's section.
#
# Made with R 4.2.2 (Debian 12 r-base-core), mboost 2.9-11 and stabs 0.6-4
# (CRAN sources, github.com/cran/mboost and github.com/cran/stabs, installed
# with R CMD INSTALL), hdf5r 1.3.8 (Debian r-cran-hdf5r). Run from the
# repository root:
#   Rscript scripts/mboost_references.R
# Every file is rewritten; the data come from fixed seeds (R's default
# Mersenne-Twister / Inversion / Rejection sampling), so a rerun with the same
# versions gives the same bytes of data.
#
# Layout (matching tests/data/gam/gam_small_mboost_*.h5): matrices row-major
# [rows, columns] as h5py/kpl read them, /selected int64 0-based, /risk
# [mstop + 1] with the risk at the offset first, every setting an attribute.

suppressPackageStartupMessages({
  library(mboost)
  library(hdf5r)
})

out_dir <- file.path("tests", "data", "gam")
stopifnot(dir.exists(out_dir))

n <- 300
n_test <- 100
p <- 4
k <- 24            # kpl's basis_size: knots = k - degree - 1 interior knots
degree <- 3
differences <- 2
df <- 4
nu <- 0.1
mstop <- 100

learners <- function(names)
  paste0("bbs(", names, ", knots = ", k - degree - 1, ", degree = ", degree,
         ", differences = ", differences, ", df = ", df, ")", collapse = " + ")

simulate <- function(seed, rows) {
  set.seed(seed)
  X <- matrix(runif(rows * p), rows, p)
  colnames(X) <- paste0("x", 1:p)
  eta <- sin(2 * pi * X[, 1]) + 2 * (X[, 2] - 0.5)^2 + 0.8 * X[, 3]  # x4 is noise
  list(X = X, eta = eta)
}

train <- simulate(2301, n)
test <- simulate(2302, n_test)
df_train <- as.data.frame(train$X)
df_test <- as.data.frame(test$X)

write_reference <- function(file, datasets, attributes) {
  path <- file.path(out_dir, file)
  if (file.exists(path)) file.remove(path)
  h5 <- H5File$new(path, mode = "w")
  for (name in names(datasets)) {
    value <- datasets[[name]]
    if (name %in% c("selected", "best_mstop")) {
      h5$create_dataset(name, robj = as.integer(value),
                        dtype = h5types$H5T_NATIVE_LLONG)
    } else if (is.matrix(value) && ncol(value) > 1) {
      # hdf5r writes R's column-major [r, c] as HDF5 [c, r]: transpose so that
      # the file holds [r, c] row-major.
      storage.mode(value) <- "double"
      h5$create_dataset(name, robj = t(value), dtype = h5types$H5T_NATIVE_DOUBLE)
    } else {
      # predict() answers [n, 1] matrices (and Matrix objects): vectors [n].
      h5$create_dataset(name, robj = as.double(as.vector(value)),
                        dtype = h5types$H5T_NATIVE_DOUBLE)
    }
  }
  common <- list(
    reference = paste0("R package mboost ", packageDescription("mboost")$Version,
                       ", mboost() with bbs base-learners; scripts/mboost_references.R"),
    basis_size = k, degree = degree, interior_knots = k - degree - 1,
    penalty_differences = differences, df = df,
    df_definition = "trace(2S - S^T S)", nu = nu, mstop = mstop,
    knots = "equidistant over [min, max] of each training covariate (all rows, zero-weight ones included); linear extrapolation outside")
  attributes <- c(attributes, common[setdiff(names(common), names(attributes))])
  for (name in names(attributes)) {
    value <- attributes[[name]]
    scalar <- H5S$new("scalar")
    if (is.character(value)) {
      h5$create_attr(name, robj = value, dtype = H5T_STRING$new(size = Inf), space = scalar)
    } else if (name %in% c("df", "nu")) {
      h5$create_attr(name, robj = as.double(value), dtype = h5types$H5T_NATIVE_DOUBLE,
                     space = scalar)
    } else {
      h5$create_attr(name, robj = as.integer(value), dtype = h5types$H5T_NATIVE_LLONG,
                     space = scalar)
    }
  }
  h5$close_all()
  cat(sprintf("%-45s %7.1f KiB\n", path, file.size(path) / 1024))
}

fit_model <- function(y, family = Gaussian(), weights = NULL, offset = NULL,
                      data = df_train, iterations = mstop) {
  data$y <- y
  formula <- as.formula(paste("y ~", learners(colnames(train$X))))
  mboost(formula, data = data, family = family, weights = weights, offset = offset,
         control = boost_control(mstop = iterations, nu = nu))
}

# What every fit file holds besides its inputs.
fit_datasets <- function(model, newdata = df_test) {
  coefs <- coef(model, which = seq_len(p))   # [p] list of k coefficients each
  coefficients <- t(sapply(coefs, function(cf) if (length(cf) == k) cf else rep(0, k)))
  lambda <- sapply(model$basemodel, function(b) b$df()["lambda"])
  list(selected = model$xselect() - 1L,
       risk = risk(model),
       pred_train = predict(model, type = "link"),
       pred_test = predict(model, newdata = newdata, type = "link"),
       coefficients = coefficients,
       lambda = lambda,
       varimp = as.numeric(varimp(model)),
       risk_reduction = -diff(risk(model)),
       model_weights = model$`(weights)`)
}

# ---------------------------------------------------------------- (a) weights
set.seed(2303)
y_gauss <- train$eta + rnorm(n, sd = 0.3)
w <- runif(n, 0.2, 3)
w[sample(n, 30)] <- 0                      # 10 % zero weights
m_w <- fit_model(y_gauss, weights = w)
write_reference("mboost_weights.h5",
  c(list(X = train$X, y = y_gauss, weights = w, X_test = test$X), fit_datasets(m_w),
    list(offset = m_w$offset)),
  list(family = "gaussian",
       offset = "weighted.mean(y, weights)",
       weights = "non-integer, 30 of them 0; mboost rescales them to w / sum(w) * sum(w > 0) (/model_weights), which /risk uses"))

# Unweighted Gaussian fit of the same data: varimp without weights.
m_u <- fit_model(y_gauss)
write_reference("mboost_gaussian.h5",
  c(list(X = train$X, y = y_gauss, X_test = test$X), fit_datasets(m_u),
    list(offset = m_u$offset)),
  list(family = "gaussian", offset = "mean(y)"))

# ---------------------------------------------------------------- (b) offset
m_os <- fit_model(y_gauss, offset = 1.5)
write_reference("mboost_offset_scalar.h5",
  c(list(X = train$X, y = y_gauss, X_test = test$X), fit_datasets(m_os),
    list(offset = 1.5)),
  list(family = "gaussian", offset = "user-given scalar 1.5 (not mean(y))"))

set.seed(2304)
offset_vector <- 0.5 * train$X[, 4] + rnorm(n, sd = 0.1)
m_ov <- withCallingHandlers(fit_model(y_gauss, offset = offset_vector),
                            warning = function(w) { message("fit: ", conditionMessage(w)); invokeRestart("muffleWarning") })
pred_test_ov <- withCallingHandlers(
  predict(m_ov, newdata = df_test, type = "link"),
  warning = function(w) { message("predict(newdata), vector offset: ", conditionMessage(w)); invokeRestart("muffleWarning") })
ds <- fit_datasets(m_ov)
ds$pred_test <- NULL
write_reference("mboost_offset_vector.h5",
  c(list(X = train$X, y = y_gauss, X_test = test$X, offset = offset_vector),
    ds[setdiff(names(ds), "pred_test")],
    list(pred_test_without_offset = pred_test_ov)),
  list(family = "gaussian",
       offset = "user-given vector /offset [n], the start f of each training row; /pred_train includes it; mboost cannot use it for new data: /pred_test_without_offset is what predict(newdata) returns (it warns), the learners' sum only"))

set.seed(2305)
exposure <- runif(n, 0.5, 2)
y_pois <- rpois(n, exposure * exp(0.5 + 0.7 * train$eta))
m_ps <- fit_model(y_pois, family = Poisson(), offset = 1)
write_reference("mboost_offset_poisson.h5",
  c(list(X = train$X, y = y_pois, X_test = test$X), fit_datasets(m_ps),
    list(offset = 1,
         pred_response_train = predict(m_ps, type = "response"),
         pred_response_test = predict(m_ps, newdata = df_test, type = "response"))),
  list(family = "poisson", offset = "user-given scalar 1 (log scale; mboost's default would be log(mean(y)))"))

m_pv <- fit_model(y_pois, family = Poisson(), offset = log(exposure))
ds <- fit_datasets(m_pv)
write_reference("mboost_offset_vector_poisson.h5",
  c(list(X = train$X, y = y_pois, X_test = test$X, offset = log(exposure)),
    ds[setdiff(names(ds), "pred_test")],
    list(pred_response_train = predict(m_pv, type = "response"))),
  list(family = "poisson",
       offset = "user-given vector /offset = log(exposure) [n]; /pred_train includes it; no test predictions (mboost drops a vector offset for new data)"))

# ---------------------------------------------------------- (c) predict type
m_pois <- fit_model(y_pois, family = Poisson())
write_reference("mboost_poisson.h5",
  c(list(X = train$X, y = y_pois, X_test = test$X), fit_datasets(m_pois),
    list(offset = m_pois$offset,
         pred_link_train = predict(m_pois, type = "link"),
         pred_link_test = predict(m_pois, newdata = df_test, type = "link"),
         pred_response_train = predict(m_pois, type = "response"),
         pred_response_test = predict(m_pois, newdata = df_test, type = "response"))),
  list(family = "poisson", offset = "log(mean(y))",
       link = "log: response = exp(link)"))

set.seed(2306)
y_bin <- rbinom(n, 1, plogis(1.5 * (train$eta - mean(train$eta))))
m_bin <- fit_model(factor(y_bin, levels = c(0, 1)), family = Binomial())
write_reference("mboost_binomial.h5",
  c(list(X = train$X, y = y_bin, X_test = test$X), fit_datasets(m_bin),
    list(offset = m_bin$offset,
         pred_link_train = predict(m_bin, type = "link"),
         pred_link_test = predict(m_bin, newdata = df_test, type = "link"),
         pred_response_train = predict(m_bin, type = "response"),
         pred_response_test = predict(m_bin, newdata = df_test, type = "response"))),
  list(family = "binomial",
       mboost_family = "Binomial() (type adaboost, logit): y coded -1/+1 internally, link f = HALF the log-odds, response = 1 / (1 + exp(-2 f)); kpl's log-odds = 2 * link, kpl's step = 4 nu / ln 2",
       offset = "0.5 * log(mean(y) / (1 - mean(y)))",
       y = "0/1 (given to mboost as factor(y, levels = c(0, 1)))"))

# Binomial(type = "glm"): f is the log-odds and the negative gradient y - p,
# kpl's parametrisation with the same nu. Its own offset is not kpl's (it is
# logit(mean((y + 0.5) / 2)), unweighted), so kpl's, logit(mean(y)), is given.
offset_glm <- qlogis(mean(y_bin))
m_glm <- fit_model(y_bin, family = Binomial(type = "glm"), offset = offset_glm)
write_reference("mboost_binomial_glm.h5",
  c(list(X = train$X, y = y_bin, X_test = test$X), fit_datasets(m_glm),
    list(offset = offset_glm,
         pred_link_train = predict(m_glm, type = "link"),
         pred_link_test = predict(m_glm, newdata = df_test, type = "link"),
         pred_response_train = predict(m_glm, type = "response"),
         pred_response_test = predict(m_glm, newdata = df_test, type = "response"))),
  list(family = "binomial",
       mboost_family = "Binomial(type = \"glm\", link = \"logit\"): y 0/1, link f = log-odds, negative gradient y - p: kpl's parametrisation and step",
       offset = "user-given scalar qlogis(mean(y)) (kpl's default; mboost's own glm offset differs)"))

# ------------------------------------------------------ (e) cvrisk bootstrap
cv_reference <- function(file, model, seed, y, weights, attributes) {
  set.seed(seed)
  folds <- cv(model.weights(model), type = "bootstrap", B = 25)
  cvr <- cvrisk(model, folds = folds, papply = lapply)
  oob <- matrix(rep(model.weights(model), ncol(folds)), ncol = ncol(folds))
  oob[folds > 0] <- 0
  datasets <- list(X = train$X, y = y)
  if (!is.null(weights)) datasets$weights <- weights
  write_reference(file,
    c(datasets,
      list(folds = folds, oobweights = oob,
           cvrisk = unclass(cvr)[, , drop = FALSE],
           cvrisk_mean = colMeans(cvr),
           best_mstop = mstop(cvr)),
      fit_datasets(model)[c("selected", "risk", "model_weights")]),
    c(attributes,
      list(folds = "cv(model.weights(model), type = \"bootstrap\", B = 25) = rmultinom(25, n, w / sum(w)) after set.seed(cv_seed): [n, 25] counts, each column one resample's integer weights",
           cv_seed = seed,
           cvrisk = "[25, mstop + 1]: out-of-bag risk per resample and iteration 0..mstop, sum(oobweights * loss) / sum(oobweights); each resample refitted with weights = folds[, b] (lambda and the offset recomputed from them, same basis)",
           oobweights = "model weights where folds[, b] == 0, else 0",
           best_mstop = "grid[which.min(colMeans(cvrisk))], grid = 0..mstop")))
  means <- colMeans(cvr)
  best <- which.min(means)
  cat(sprintf("  best mstop %d, mean oob risk %.6g (at %d: %.6g, at %d: %.6g; at 0: %.6g)\n",
              mstop(cvr), means[best], best - 2, means[max(best - 1, 1)], best,
              means[min(best + 1, length(means))], means[1]))
}
# Noisier data and a longer path than above, so that the cross-validated risk
# has its minimum well inside the grid.
mstop_cv <- 200
set.seed(2309)
y_cv <- train$eta + rnorm(n, sd = 1)
m_cv <- fit_model(y_cv, iterations = mstop_cv)
cv_reference("mboost_cvrisk_bootstrap.h5", m_cv, 2307, y_cv, NULL,
             list(family = "gaussian", mstop = mstop_cv,
                  offset = "mean(y); per resample the mean weighted by its counts"))
m_cvw <- fit_model(y_cv, weights = w, iterations = mstop_cv)
cv_reference("mboost_cvrisk_bootstrap_weighted.h5", m_cvw, 2308, y_cv, w,
             list(family = "gaussian", mstop = mstop_cv,
                  offset = "weighted.mean(y, weights); per resample the mean weighted by its counts",
                  weights = "the fit's weights (/weights, as in mboost_weights.h5) are non-integer: mboost rescales them (/model_weights); the bootstrap draws with probabilities model_weights / sum and the out-of-bag risk weights by model_weights"))

cat("mboost", packageDescription("mboost")$Version, "R", R.version.string, "\n")
