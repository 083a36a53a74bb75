"""The randomized sign of one Fourier coefficient, shared by InpHT and MargHT.

A user of either mechanism samples one nonzero Fourier coefficient ``alpha`` of (a part of)
their binary-coded record (:mod:`.base` docstring) and reports the sign
``(-1)^popcount(alpha & code)``, kept with probability ``p = a / 2^52`` (:func:`sign_numerator`,
decided on integers) and flipped otherwise. The report is one output index ``2 t + bit`` (``t``
the coefficient's position among the mechanism's, ``bit = 1`` for ``+1``) and the statistic
counts each output. This module holds that common part: the exact numerator, the report set and
its counts, the debiased coefficients, the exact simulation of the signs, the rows of the
strategy matrix, and the marginal table (and its variance) rebuilt from the coefficients.
"""

import numpy as np

from ..._fwht import fwht
from .._base.bits import bernoulli_bits
from .._base.exact import TABLE_PRECISION, integer_ratio_at_most, keep_numerator
from .._base.mechanism import (
    check_output_counts,
    count_outputs,
    index_report_validity,
    report_count,
)
from .base import _MarginalsOnlyMechanism

# Fourier coefficients are int64 masks over the concatenated attribute codes.
MAX_CODE_BITS = 62


def sign_numerator(epsilon):
    """``(a, p, debias)`` of the randomized sign of InpHT / MargHT, checked exactly.

    The true sign is kept with probability ``p = a / 2^52``, ``a`` the largest integer with
    ``a / (2^52 - a) <= e^eps`` (:func:`~._exact.keep_numerator`, decided on integers), so
    the realised ratio never exceeds the claim. ``p`` and ``debias = 1 / (2p - 1)`` are the
    realised values (exact float64: ``a < 2^53``), so the estimates stay unbiased for what is
    sampled.

    Examples
    --------
    >>> a, p, debias = sign_numerator(1.0)
    >>> a, round(p, 12), round(debias, 9)
    (3292395142304094, 0.73105857863, 2.163953414)
    """
    one = 2**TABLE_PRECISION
    numerator = keep_numerator(epsilon, 2, TABLE_PRECISION)
    check_sign_numerator(numerator, epsilon)
    return numerator, numerator / one, one / (2 * numerator - one)


def check_sign_numerator(numerator, epsilon, name="the sign's numerator"):
    """Refuse a kept-sign numerator ``a`` unless ``1/2 < a / 2^52 < 1`` and ``a / (2^52 - a)
    <= e^eps``, decided exactly (a ValueError naming the value)."""
    one = 2**TABLE_PRECISION
    if isinstance(numerator, bool) or not isinstance(numerator, (int, np.integer)) \
            or not one // 2 < numerator < one \
            or not integer_ratio_at_most(numerator, one - numerator, epsilon):
        raise ValueError(f"{name} {numerator!r} is not a probability a / 2^{TABLE_PRECISION} "
                         f"in (1/2, 1) with a / (2^{TABLE_PRECISION} - a) <= e^{epsilon!r}.")


class _FourierSignMechanism(_MarginalsOnlyMechanism):
    """Base of InpHT and MargHT: one randomized Fourier sign per user (module docstring).

    Subclasses set ``n_outputs`` (twice their number of coefficients) and lay out the
    coefficients; this class holds the realised sign probability (``sign_numerator``, ``p``,
    ``debias``), the reports and their counts, and the decoding of the signs.
    """

    def __init__(self, n_inputs, epsilon, shape, max_order):
        super().__init__(n_inputs, epsilon, shape, max_order)
        # Realised p = a / 2^52 (exact) and 1 / (2p - 1): see sign_numerator.
        self.sign_numerator, self.p, self.debias = sign_numerator(self.epsilon)

    @staticmethod
    def _check_code_bits(n_bits, codes):
        """Refuse ``codes`` (words for the codes, e.g. "a set's binary codes") longer than
        the int64 masks hold."""
        if n_bits > MAX_CODE_BITS:
            raise ValueError(f"{codes} need {n_bits} bits; the Hadamard mechanisms handle at "
                             f"most {MAX_CODE_BITS}.")

    def _reported_bits(self, rng, parity):
        """The reported bit of each user (1 for ``+1``) from the true sign's parity."""
        flipped = bernoulli_bits(rng, parity.shape[0], 2**TABLE_PRECISION - self.sign_numerator)
        return 1 ^ parity ^ flipped

    def _sign_weights(self, positive):
        """Integer weights of the outputs ``2 t + bit`` of the randomized signs of coefficients
        whose true sign is ``positive[t]`` (``+1``): the true bit has weight ``a``, the other
        ``2^52 - a``."""
        kept, flipped = int(self.sign_numerator), 2**TABLE_PRECISION - int(self.sign_numerator)
        weights = []
        for plus in np.asarray(positive, dtype=bool).tolist():
            weights += [flipped, kept] if plus else [kept, flipped]
        return weights

    def report_validity(self, reports):
        return index_report_validity(reports, self.n_outputs, self.name)

    def aggregate(self, reports):
        return count_outputs(self.check_reports(reports), self.n_outputs)

    def n_reports(self, statistic):
        return report_count(check_output_counts(statistic, self.n_outputs, self.name))

    def _debiased(self, plus, minus):
        """Debiased mean sign of the users who reported ``plus`` / ``minus`` (0 if none)."""
        return self.debias * (plus - minus) / np.maximum(plus + minus, 1.0)

    @staticmethod
    def _true_signs(split, negative):
        """``(plus, minus)`` per coefficient: users ``split[code, t]`` whose true sign
        (``negative[code, t]`` for ``-1``) is each, summed over the codes."""
        return np.where(negative, 0, split).sum(axis=0), np.where(negative, split, 0).sum(axis=0)

    def _reported_signs(self, true_plus, true_minus, rng):
        """Exact draw of the reported ``(plus, minus)`` counts from the true ones."""
        kept_plus = rng.binomial(true_plus, self.p)
        kept_minus = rng.binomial(true_minus, self.p)
        return kept_plus + (true_minus - kept_minus), kept_minus + (true_plus - kept_plus)

    def _sign_rows(self, positive, scale):
        """Rows ``2 t + bit`` of ``P(o | u)`` for coefficients sampled with ``1 / scale``."""
        plus = np.where(positive, self.p, 1.0 - self.p) / scale
        rows = np.empty((2 * plus.shape[0], plus.shape[1]))
        rows[1::2], rows[0::2] = plus, 1.0 / scale - plus
        return rows

    def _hadamard_table(self, coefficients, attributes):
        """Marginal fractions from the coefficients ``F`` over ``attributes``' codes (folded)."""
        coded = fwht(coefficients) / coefficients.shape[0]
        valid = self._valid_codes(attributes)
        table = coded[valid] + coded[~valid].sum() / valid.sum()
        return table.reshape(tuple(self.shape[a] for a in attributes))

    def _hadamard_variance(self, attributes, n_users, table, users_per_coefficient):
        """Per-cell variance of ``_hadamard_table`` (:mod:`.base` docstring; first order)."""
        valid = self._valid_codes(attributes)
        size = valid.shape[0]
        coded = np.zeros(size)
        coded[valid] = table.ravel()
        coefficients = fwht(coded)  # F[alpha] of the true marginal, F[0] = 1
        debias = self.debias  # the realised 1 / (2p - 1) (InpHT and MargHT)
        variances = (debias**2 - coefficients**2) / users_per_coefficient
        variances[0] = 0.0  # F[0] = 1 is known
        folded = fwht((~valid).astype(float))  # g = H 1_invalid
        n_valid = valid.sum()
        cross = fwht(variances * folded)[valid]
        cell = (variances.sum() + 2.0 * cross / n_valid
                + np.sum(variances * folded**2) / n_valid**2) / size**2
        cell = cell - table.ravel() * (1.0 - table.ravel()) / n_users
        return cell.reshape(table.shape)
