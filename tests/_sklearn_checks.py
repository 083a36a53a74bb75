"""The scikit-learn checks that an estimator decoding LDP reports cannot pass from its
default constructor: each fits a raw feature matrix and expects success, which such an
estimator refuses by design (privatizing raw records is a collection, so it needs an
explicit strategy and epsilon). The test files declare them with their reason."""

FITS_A_FEATURE_MATRIX = (
    "check_fit_score_takes_y", "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
    "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_dtype_object",
    "check_estimators_nan_inf", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_fit2d_1sample", "check_fit2d_1feature",
    "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted",
    "check_n_features_in", "check_fit2d_predict1d",
)

# check_estimators_dtypes fits categorical codes stored as float64 (0.0, 1.0, ...). A float
# column read from the data is a number, refused unless bounds=, its categories, or
# categories="observed" (a histogram of the observed values, made public) are given.
FLOAT_CODES_REFUSED = {
    "check_estimators_dtypes":
        "the check fits categorical codes stored as floats; a float column whose categories "
        "would be read from the data is refused as a number (bounds=, declared categories or "
        "categories='observed' are the explicit choices); the integer dtypes pass",
}
