"""Dependency-free LDP client: rebuild a randomizer from the server's JSON, privatize one record.

This package uses the Python standard library only (no numpy, no other ``sklearn_ldp`` module),
and its modules import only each other (relative imports), so a team can copy the folder
``sklearn_ldp/deploy/client/`` alone onto a device (under any name). The server builds a
mechanism (``LDPEncoder`` or ``sklearn_ldp.mechanisms``) and ships ``mechanism.to_json()``;
each device runs::

    randomizer = Randomizer.from_json(spec_text, categories={"age": ["<30", "30-50", ">50"],
                                                             "smoker": ["no", "yes"]})
    report = randomizer.privatize({"age": "30-50", "smoker": "yes"})
    send(json.dumps(report))

and the server turns the reports it receives back into an array with
``sklearn_ldp.deploy.collect.reports_from_client`` (see ``docs/client.md``).

Entropy. By default every random draw comes from the operating system
(``random.SystemRandom``, i.e. ``os.urandom``). ``seed=`` switches to a seeded Mersenne
Twister: **for tests and simulation only**, never in deployment (anyone who knows the seed can
undo the randomization); a seeded Randomizer emits a UserWarning saying so.

Exactness. A report has exactly the distribution of one row of the server's
``mechanism.randomize``, computed with the same arithmetic:

* unary encoding (``rappor``, ``oue``) and ``subset_selection`` draw their bits with dyadic
  probabilities ``a / 2^52``, with ``a`` rounded from the nominal probability in 80-digit
  decimal arithmetic in the direction that keeps the ratio ``<= e^eps`` (the same integers
  ``a`` as the server, checked by the tests); a bit is ``[U < a]`` for ``U`` uniform on 52
  bits, which is exactly Bernoulli(``a / 2^52``);
* ``randomized_response``, local hashing (``olh``, ``blh``), ``hadamard``, ``hrr``, ``haar``
  and the ``hierarchical`` tree's levels sample a two-weight law: favoured outputs of integer
  weight ``a``, the others ``d = 2^s``, ``a / d <= e^eps`` decided on integers in 80-digit
  decimal arithmetic (the server's integers, checked by the tests, and checked again here
  when the spec loads), drawn from one exactly uniform integer in ``[0, total)``
  (``randrange``: rejection, no rounding) -- exactly the law of the server's ``randomize``;
  their levels, coefficients and hash seeds are exactly uniform integers too;
* the other discrete kinds compare a uniform double (53 bits, like numpy's ``random``) with
  the server's floating-point probability formula. The client evaluates ``e^eps`` correctly
  rounded (the same on every device); numpy's ``exp`` can differ from it in the last bit, so
  those probabilities may differ from the server's by about ``1e-16`` (relative), far below
  anything observable (see ``docs/client.md``);
* ``factorization`` samples the integer table the spec carries (columns summing to
  ``2^52``) by integer inverse CDF on ``rng.getrandbits(52)``, after the server's exact check
  of the table (every row's ``max <= e^eps min`` on integers): the server's law exactly;
* local hashing uses the server's hash family (two-character additive tabulation with
  SplitMix64 table entries) bit for bit;
* the Hadamard marginal kinds (``inp_ht``, ``marg_ht``), PEM/TreeHist and the sketches keep
  the true sign or bucket when a uniform 52-bit word is below the server's numerator ``a``
  (``_keep_numerator``: the largest with ``a (g - 1) / (2^52 - a) <= e^eps``, decided on
  integers; the sketch's flip numerator is ``2^52 - a``); coefficients, sets, rounds and
  other buckets are ``randrange`` draws (rejection, exactly uniform). SPL and InpEM split
  ``eps`` into the server's shares (``_split_budget``: the product of the sampled ratios
  is within ``e^eps``, decided on integers);
* the Gaussian kinds (spec version 2) report points of the public lattice ``2^-m Z^d``: the
  exact discrete Gaussian (CKS20, ``randrange`` only) on integer lattice coordinates; the
  ``gaussian`` kind rounds ``a_u 2^m`` by an exact 52-bit Bernoulli and re-runs the server's
  exact zCDP check (60-digit Decimal) on the spec's lattice integers; ``gaussian_pure`` keeps
  a draw by an exact 52-bit Bernoulli of its keep numerator clamped into the envelope
  ``[lo, hi]``, re-derived and checked on integers (its ``sigma``, from stdlib ``erf``,
  agrees with the server's to about ``1e-12`` and only shapes the keep probability).

* the math-layer kinds (numbers: ``duchi``, ``piecewise``, ``hybrid``, ``square_wave``,
  ``sampled_mean``; ``multi_attribute``; LDPEncoder's ``"columns"`` records; heavy hitters:
  ``prefix_heavy_hitters``, ``sketch``; rounds: ``longitudinal``, ``dbitflip_pm``,
  ``1bitmean_pm``) take values that are not cell indices. The numeric kinds report points of
  the server's public grid with its exact integer law (``mechanisms/_base/window.py``): the
  window weights ``a / b <= e^eps``, the grid size and window, Hybrid's mixture numerator and
  the per-value budget of ``sampled_mean`` are re-derived here with the server's integer and
  80-digit decimal arithmetic and compared with the spec's ``grid`` (an edited one is
  refused); the value's position is rounded by a dyadic bit ``[U_52 < F]``, the cell drawn
  from ``random.randrange(T)`` (exact rejection) by the closed-form inverse CDF, Duchi's bit
  as ``[U_63 < b 2^35 + F (a - b)]``, and the grid value computed as ``float(j) * slope +
  offset`` from the same correctly rounded floats as the server's; their oracles inside are
  the exact kinds above; the heavy-hitter hashes (SplitMix64 rows
  of PEM/TreeHist, the sketch's fingerprints and salts) are the server's bit for bit and the
  heavy hitters' and 1BitMean's bits are exact dyadic draws with the server's numerators.
  Hybrid's ``eps_star`` is the server's float literal, and RS+FD's attribute budget is
  bisected the same way on both sides (the same float). The longitudinal kinds draw with the
  integer numerators the server ships in the spec, checked exactly against ``epsilon_perm``
  and ``epsilon_1`` here (nothing re-solved).

The memoizing kinds (``longitudinal``, ``dbitflip_pm``, ``1bitmean_pm``) never store a
permanent response: it is *derived* from a 128-bit secret of the device and the value through
SipHash-2-4 (a keyed PRF, bit for bit the server's), read by the exact samplers. The secret
lives in a client **state file** (``Randomizer(..., state=path)``): JSON, created on first
use from the operating system's entropy (a seeded Randomizer derives it from the seed,
simulation only), written atomically (temporary file, fsync, rename, fsync of the folder)
under a non-blocking ``fcntl.flock`` of ``path + ".lock"`` (a second process using the file
at the same moment is refused), bound to the spec by the SHA-256 of its canonical JSON and
sealed by a SHA-256 of its content. Restoring a backup of the file gives the same secret, so
the same permanent responses; a lost secret means new permanent responses (``epsilon_perm``
spent again for every value reported afterwards). A state file of another spec, edited,
truncated or gone after use is a ValueError naming the file: the client never makes a new
secret in place of one it could not read.

Central-model mechanisms (``MatrixMechanism``, the count mechanisms) run on a trusted
curator, not on clients: they have no client randomizer here.

Layout (each module imports only the ones listed before it): ``_exact`` (exact integer
arithmetic, random bits, SplitMix64), ``_spec`` (versions, field checks, shared limits),
``records`` (categories -> cell codes), ``memo`` (SipHash-2-4 PRF and the state file), one
module per family of kinds (``oracles``, ``ranges``, ``bassily``, ``marginals``, ``numeric``,
``multi_attribute``, ``heavy_hitters``, ``longitudinal``, ``columns``), ``registry``
(``RANDOMIZERS``) and ``randomizer`` (:class:`Randomizer`).

Adding a kind: write one ``_<kind>(spec)`` function returning ``(n_inputs, privatize_cell)``
(or a ``_ValueKind`` for values that are not cell indices) in its family's module and add it to
``RANDOMIZERS`` in ``registry.py``.
"""

from ._spec import SPEC_VERSION
from .randomizer import Randomizer
from .registry import RANDOMIZERS

__all__ = ["RANDOMIZERS", "SPEC_VERSION", "Randomizer"]
