"""The ``sklearn-ldp`` command line: client specs, aggregation of report files, answers, plans.

Subcommands (``sklearn-ldp SUBCOMMAND --help`` for each; also ``python -m sklearn_ldp``):

* ``spec CONFIG -o SPEC.json``: the specification devices load, from a small JSON or TOML
  configuration (columns, epsilon, strategy, workload, n_users);
* ``aggregate REPORTS... -o AGG.npz``: report files or folders (CSV, CSV.gz, Parquet, and the
  ``.npz`` files of ``LDPReports.save`` / ``AggregatedReports.save``) into one aggregate;
* ``estimate AGG --estimator NAME -o OUT.csv|OUT.parquet``: answers with their standard errors
  and margins of error;
* ``plan SPEC --margin 0.01``: users needed for a margin of error (and the margin for
  ``n_users``);
* ``serve --store DB --collection NAME=SPEC.json``: the reference collector
  (:mod:`sklearn_ldp.deploy.collector`, needs the ``server`` extra) until stopped.

Every failure (a missing, truncated or foreign file, a bad configuration) exits with status 1
and one line on stderr naming the file and the problem; outputs are written to a temporary
file renamed onto the target, so nothing partial is ever left.
"""

import argparse
import json
import math
import os
import sys
import types

import numpy as np
import pandas as pd

from . import workloads
from ._glue import resolve_workload
from .deploy.io import aggregate_files
from .deploy.io.aggregate import _Progress
from .deploy.limits import atomic_write, writer_lock
from .domain import Domain
from .encoder import LDPEncoder
from .estimators import (
    AttributeHistogramEstimator,
    MarginalEstimator,
    MeanEstimator,
    RangeQueryEstimator,
    WorkloadEstimator,
)
from .mechanisms._base.specs import load_mechanism
from .mechanisms.marginals.base import MarginalMechanism
from .mechanisms.multi_attribute.columns import ColumnsMechanism
from .planning import margin_of_error, per_user_variance, users_needed, z_value
from .reports import AggregatedReports, LDPReports

SPEC_FORMAT = "sklearn_ldp.spec"
SPEC_VERSION = 1
CONFIG_KEYS = ("columns", "epsilon", "strategy", "workload", "n_users", "delta", "branching",
               "oracle", "max_order")
ESTIMATORS = ("histogram", "workload", "range", "marginal", "numeric")


class CommandError(Exception):
    """A failure reported as one line on stderr (exit status 1)."""


# ---------------------------------------------------------------------- files
def _read_text(path, what):
    if not os.path.exists(path):
        raise CommandError(f"{path}: no such file ({what}).")
    if os.path.isdir(path):
        raise CommandError(f"{path}: is a directory, not a {what} file.")
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"{path}: not a {what} file (not UTF-8 text).") from None


def _read_config(path):
    """The configuration: a JSON object, or TOML for a ``.toml`` file."""
    text = _read_text(path, "configuration")
    toml = path.endswith(".toml")
    if toml:
        try:
            import tomllib  # the standard library's from Python 3.11
        except ImportError:
            raise CommandError(f"{path}: TOML configurations need Python 3.11 or later "
                               "(tomllib); write the configuration as JSON.") from None
    try:
        config = tomllib.loads(text) if toml else json.loads(text)
    except ValueError as exc:  # json.JSONDecodeError and tomllib.TOMLDecodeError alike
        raise CommandError(f"{path}: not valid {'TOML' if toml else 'JSON'} ({exc}).") from None
    if not isinstance(config, dict):
        raise CommandError(f"{path}: the configuration must be an object of {CONFIG_KEYS}, "
                           f"got {type(config).__name__}.")
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise CommandError(f"{path}: unknown key(s) {unknown}; the configuration takes "
                           f"{list(CONFIG_KEYS)}.")
    for key in ("columns", "epsilon"):
        if key not in config:
            raise CommandError(f"{path}: the configuration has no {key!r}.")
    n_users = config.get("n_users")
    if n_users is not None and (isinstance(n_users, bool) or not isinstance(n_users, int)
                                or n_users < 1):
        raise CommandError(f"{path}: 'n_users' must be an integer >= 1, got {n_users!r}.")
    return config


def _column_options(columns, path):
    """``(categories, bounds)`` from the ``columns`` of a configuration."""
    if not isinstance(columns, dict) or not columns:
        raise CommandError(f"{path}: 'columns' must be an object column -> categories (a list), "
                           f"{{'bounds': [low, high]}}, 'strings' or a bit length, got "
                           f"{columns!r}.")
    categories, bounds = {}, {}
    for name, value in columns.items():
        if isinstance(value, dict) and set(value) == {"categories"}:
            value = value["categories"]
        if isinstance(value, dict) and set(value) == {"bounds"}:
            bounds[name] = tuple(value["bounds"]) if isinstance(value["bounds"], list) \
                else value["bounds"]
        elif isinstance(value, list) or value == "strings" or (
                isinstance(value, int) and not isinstance(value, bool)):
            categories[name] = value  # a list, or heavy hitters: "strings" or a bit length
        else:
            raise CommandError(f"{path}: column {name!r} must be a list of categories, "
                               f"{{'bounds': [low, high]}}, 'strings' or a bit length, got "
                               f"{value!r}.")
    return categories or None, bounds or None


def _workload(value, domain, where):
    """The workload of a configuration: None, a name, or ``{"marginals": k}``."""
    if isinstance(value, dict):
        if set(value) != {"marginals"}:
            raise CommandError(f"{where}: 'workload' must be a name ('histogram', 'prefix', "
                               f"'all_range') or {{'marginals': k}}, got {value!r}.")
        return workloads.marginals(domain, k=value["marginals"])
    if value is None or isinstance(value, str):
        return value
    raise CommandError(f"{where}: 'workload' must be a name ('histogram', 'prefix', "
                       f"'all_range') or {{'marginals': k}}, got {value!r}.")


def _check_output(path):
    """Refuse an output path whose folder does not exist (before any work is done)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CommandError(f"{path}: the folder {folder} does not exist.")
    if os.path.isdir(path):
        raise CommandError(f"{path}: is a directory, not an output file.")


def _write_bytes(path, data):
    """``data`` at ``path``, atomically (temporary file, fsync, rename) under its lock."""
    with writer_lock(path), atomic_write(path) as handle:
        handle.write(data)


# ---------------------------------------------------------------------- spec
def _encoder(config, path):
    categories, bounds = _column_options(config["columns"], path)
    listed = categories and all(isinstance(v, list) for v in categories.values())
    domain = Domain(categories) if listed else None
    options = {key: config[key] for key in ("delta", "branching", "oracle", "max_order")
               if key in config}
    return LDPEncoder(categories=categories, bounds=bounds, epsilon=config["epsilon"],
                      strategy=config.get("strategy", "auto"),
                      workload=_workload(config.get("workload"), domain, path), **options)


def command_spec(args):
    """Write the client specification of a configuration."""
    _check_output(args.output)
    config = _read_config(args.config)
    try:
        encoder = _encoder(config, args.config).fit()
    except (ValueError, TypeError) as exc:
        raise CommandError(f"{args.config}: {exc}") from None
    spec = {
        "format": SPEC_FORMAT,
        "version": SPEC_VERSION,
        "mechanism": json.loads(encoder.client_spec()),
        # The server's mechanism: the same, except for heavy hitters, whose devices run the
        # bare protocol while the server's reports carry the column and its encoding.
        "server_mechanism": encoder.mechanism_.to_dict(),
        "categories": None if encoder.domain_ is None else encoder.domain_.to_dict(),
        "workload": config.get("workload"),
        "n_users": config.get("n_users"),
        "strategy": encoder.strategy_,
    }
    _write_bytes(args.output, json.dumps(spec, indent=1).encode("utf-8"))
    _say(args, f"wrote {args.output}: strategy {encoder.strategy_!r}, epsilon "
               f"{encoder.epsilon_:g}")


def _load_spec(path):
    """``(spec, reports-like model with mechanism, domain and workload)`` of a spec file."""
    try:
        spec = json.loads(_read_text(path, "spec"))
    except ValueError as exc:
        raise CommandError(f"{path}: not valid JSON ({exc}).") from None
    if not isinstance(spec, dict) or spec.get("format") != SPEC_FORMAT:
        raise CommandError(f"{path}: not a spec written by 'sklearn-ldp spec' (no format "
                           f"{SPEC_FORMAT!r}).")
    if spec.get("version") != SPEC_VERSION:
        raise CommandError(f"{path}: unsupported spec version {spec.get('version')!r}; this "
                           f"sklearn_ldp reads version {SPEC_VERSION}.")
    try:
        mechanism = load_mechanism(spec.get("server_mechanism", spec["mechanism"]))
        domain = None if spec.get("categories") is None else Domain(spec["categories"])
        workload = spec.get("workload")
        if domain is not None and not isinstance(mechanism, MarginalMechanism | ColumnsMechanism):
            workload = resolve_workload(_workload(workload, domain, path), domain)
        else:
            workload = None
    except (ValueError, TypeError, KeyError) as exc:
        raise CommandError(f"{path}: {exc}") from None
    return spec, types.SimpleNamespace(mechanism=mechanism, domain=domain, workload=workload)


# ---------------------------------------------------------------------- aggregate
def _expand(sources):
    """``(npz files, report files)``: folders expanded to their visible files."""
    npz, others = [], []
    for source in sources:
        if os.path.isdir(source):
            names = sorted(n for n in os.listdir(source) if not n.startswith((".", "_")))
            paths = [os.path.join(source, n) for n in names]
            paths = [p for p in paths if os.path.isfile(p)]
            if not paths:
                raise CommandError(f"{source}: the folder holds no report file.")
        elif os.path.isfile(source):
            paths = [source]
        else:
            raise CommandError(f"{source}: no such file or folder.")
        for path in paths:
            (npz if path.endswith(".npz") else others).append(path)
    return npz, others


def _load_npz(path, allow_unverified):
    """An ``.npz`` of reports (aggregated here) or of an aggregate."""
    try:
        return AggregatedReports.load(path, allow_unverified=allow_unverified)
    except ValueError as exc:
        if "holds LDPReports" not in str(exc):
            raise
    return LDPReports.load(path, allow_unverified=allow_unverified).aggregate()


def command_aggregate(args):
    """Aggregate report files and folders into one ``AggregatedReports`` file."""
    _check_output(args.output)
    npz, others = _expand(args.reports)
    model = _load_spec(args.spec)[1] if args.spec else None
    mechanism = None if model is None else model.mechanism
    show = not args.quiet and sys.stderr.isatty()
    # The readers' progress bar, one step per .npz file (each is read at once).
    bar = _Progress([types.SimpleNamespace(path=path, n_rows=0) for path in npz], show)
    parts = []
    for path in npz:
        parts.append(_load_npz(path, args.allow_unverified))
        bar.update(None, len(parts[-1]), 0)
        bar.file_done()
    for path, part in zip(npz, parts, strict=True):
        mechanism = mechanism or part.mechanism
        if part.mechanism != mechanism:
            where = "the spec's" if model is not None else f"{npz[0]}'s"
            raise CommandError(f"{path}: holds reports of {part.mechanism!r}, not of "
                               f"{where} {mechanism!r}.")
    if others:
        parts.append(aggregate_files(others, mechanism=mechanism, progress=show,
                                     allow_unverified=args.allow_unverified))
    total = AggregatedReports.merge(parts)
    if model is not None:
        total = AggregatedReports(total.statistic, total.mechanism,
                                  total.domain or model.domain, total.workload or model.workload)
    total.save(args.output)
    _say(args, f"wrote {args.output}: {len(total):,} reports from {len(npz) + len(others)} "
               "files")


# ---------------------------------------------------------------------- estimate
def _labels(index):
    """One string per answer of a pandas index (``a=x, b=y`` for a marginal's cells)."""
    if isinstance(index, pd.MultiIndex):
        return [", ".join(f"{n}={v}" for n, v in zip(index.names, row, strict=True))
                for row in index]
    if index.name is not None and not isinstance(index, pd.RangeIndex) \
            and index.name not in ("query", "answer", "column"):
        return [f"{index.name}={v}" for v in index]
    return [str(v) for v in index]


def _range_bounds(tokens, estimator):
    """``[[lo, hi], ...]`` from ``LO:HI`` tokens: category labels (as written) or indices."""
    by_text = {str(label): label for label in estimator.labels_}
    ranges = []
    for token in tokens:
        parts = token.split(":")
        if len(parts) != 2:
            raise CommandError(f"--ranges: {token!r} is not LO:HI.")
        pair = []
        for part in parts:
            if part in by_text:
                pair.append(by_text[part])
            elif part.lstrip("-").isdigit():
                pair.append(int(part))
            else:
                raise CommandError(f"--ranges: {part!r} in {token!r} is neither a category "
                                   "nor a cell index.")
        ranges.append(pair)
    return ranges


def estimate_table(aggregate, estimator, confidence=0.95, ranges=None):
    """Answers, standard errors and margins of an aggregate, one row per answer.

    Parameters
    ----------
    aggregate : AggregatedReports
        The aggregate (with its domain and workload for labelled answers).
    estimator : {"histogram", "workload", "range", "marginal", "numeric"}
        Which estimator answers: the histogram of the cells (or of every categorical column of
        a record), the aggregate's workload, the CDF (or ``ranges``), every marginal, the
        means of the numeric columns.
    confidence : float in (0, 1), default=0.95
        The coverage of the margins.
    ranges : list of str, optional
        ``"LO:HI"`` closed ranges for ``estimator="range"`` (default: the CDF).

    Returns
    -------
    pandas.DataFrame
        Columns ``query``, ``answer`` (shares of users, a mean in its column's unit),
        ``std_error`` (the analytic worst-case standard error for the users aggregated) and
        ``margin`` (``z`` times it); the answers are the unbiased estimates.
    """
    n_users = len(aggregate)
    mechanism = aggregate.mechanism
    queries = None
    if estimator == "histogram" and isinstance(mechanism, ColumnsMechanism):
        fitted = AttributeHistogramEstimator().fit(aggregate)
        answers = fitted.answers_
        queries = list(answers.index)
    elif estimator in ("histogram", "workload"):
        fitted = WorkloadEstimator(workload="histogram" if estimator == "histogram" else None,
                                   normalize=True).fit(aggregate)
        answers = fitted.answers_
        queries = fitted.workload_
    elif estimator == "range":
        fitted = RangeQueryEstimator().fit(aggregate)
        if ranges:
            pairs = _range_bounds(ranges, fitted)
            answers = pd.Series(fitted.predict(pairs), index=fitted.predict_error(pairs).index)
            domain = aggregate.domain or Domain.from_size(mechanism.n_inputs)
            queries = workloads.ranges(domain, [tuple(p) for p in pairs])
        else:
            answers = fitted.cdf()
            answers.index = [f"<= {label}" for label in answers.index]
            queries = "prefix"
    elif estimator == "marginal":
        # Unbiased tables (no post-processing): the margins describe them. Each cell gets
        # the margin of its table's worst cell.
        fitted = MarginalEstimator(postprocess="none").fit(aggregate)
        variance, _ = per_user_variance(aggregate)
        rows = []
        for table, cell_variance in zip(fitted.predict(list(variance.index)), variance,
                                        strict=True):
            rows += [(label, float(value), cell_variance)
                     for label, value in zip(_labels(table.index), table.to_numpy(),
                                             strict=True)]
        frame = pd.DataFrame(rows, columns=["query", "answer", "variance"])
        return _with_errors(frame, n_users, z_value(confidence))
    elif estimator == "numeric":
        fitted = MeanEstimator().fit(aggregate)
        answers = fitted.mean_
        queries = list(answers.index)
    else:
        raise CommandError(f"--estimator must be one of {list(ESTIMATORS)}, got {estimator!r}.")
    variance, _ = per_user_variance(aggregate, queries)
    frame = pd.DataFrame({"query": _labels(answers.index),
                          "answer": answers.to_numpy(dtype=float),
                          "variance": variance.to_numpy(dtype=float)})
    return _with_errors(frame, n_users, z_value(confidence))


def _with_errors(frame, n_users, z):
    frame["std_error"] = np.sqrt(frame.pop("variance") / n_users)
    frame["margin"] = z * frame["std_error"]
    return frame


def command_estimate(args):
    """Answer from an aggregate file; write CSV or Parquet."""
    if not args.output.endswith((".csv", ".parquet")):
        raise CommandError(f"{args.output}: the output must end in .csv or .parquet.")
    _check_output(args.output)
    if not os.path.exists(args.aggregate):
        raise CommandError(f"{args.aggregate}: no such file (aggregate).")
    aggregate = AggregatedReports.load(args.aggregate, allow_unverified=args.allow_unverified)
    try:
        table = estimate_table(aggregate, args.estimator, args.confidence, args.ranges)
    except (ValueError, TypeError) as exc:
        raise CommandError(f"{args.aggregate}: {exc}") from None
    if args.output.endswith(".csv"):
        data = table.to_csv(index=False).encode("utf-8")
    else:
        import io  # Parquet through pyarrow, only when asked for

        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        data = buffer.getvalue()
    _write_bytes(args.output, data)
    _say(args, f"wrote {args.output}: {len(table)} answers from {len(aggregate):,} reports")


# ---------------------------------------------------------------------- plan
def command_plan(args):
    """Print the users needed for a margin, and the margin for the planned users."""
    spec, model = _load_spec(args.spec)
    queries = args.queries
    try:
        needed = users_needed(model, args.margin, args.confidence, queries,
                              simultaneous=args.simultaneous)
        n_users = args.users if args.users is not None else spec.get("n_users")
        margin = None if n_users is None else margin_of_error(
            model, n_users, args.confidence, queries, simultaneous=args.simultaneous)
    except (ValueError, TypeError) as exc:
        raise CommandError(f"{args.spec}: {exc}") from None
    together = " (all answers at once)" if args.simultaneous else ""
    print(f"strategy {spec.get('strategy')!r}, epsilon {model.mechanism.epsilon:g}")
    print(f"users needed for a margin of +-{args.margin:g} at {args.confidence:.0%}"
          f"{together}: {needed}")
    if margin is not None:
        print(f"margin of error with {n_users} users: +-{margin:.4g}")


# ---------------------------------------------------------------------- main
def _collection_spec(path):
    """The client specification in ``path``: a spec written by ``spec`` (its ``mechanism``)
    or the bare JSON of ``LDPEncoder.client_spec()``."""
    text = _read_text(path, "spec")
    try:
        spec = json.loads(text)
    except ValueError as exc:
        raise CommandError(f"{path}: not valid JSON ({exc}).") from None
    if isinstance(spec, dict) and spec.get("format") == SPEC_FORMAT:
        return json.dumps(spec["mechanism"])
    return text


def command_serve(args):
    """Register the collections and serve them with the reference collector until stopped."""
    from .deploy.collector import open_store, serve

    store = open_store(args.store)
    for item in args.collection:
        name, sep, path = item.partition("=")
        if not sep:
            raise CommandError(f"--collection takes NAME=SPEC_FILE, got {item!r}.")
        try:
            store.add_collection(name, _collection_spec(path))
        except ValueError as exc:
            raise CommandError(f"{path}: {exc}") from None
    store.close()  # this thread's connection; the server's threads open their own
    _say(args, f"serving {len(args.collection)} collection(s) on http://{args.host}:"
               f"{args.port} (access log {'on' if args.access_log else 'off'})")
    serve(store, host=args.host, port=args.port, access_log=args.access_log,
          max_batch_reports=args.max_batch_reports, rate=args.rate, burst=args.burst)


def _say(args, message):
    if not getattr(args, "quiet", False):
        print(message, file=sys.stderr)


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text}")
    return value


def _confidence(text):
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text}")
    return value


def _margin(text):
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def build_parser():
    """The argument parser of ``sklearn-ldp``.

    Returns
    -------
    argparse.ArgumentParser
        The parser, with one subparser per subcommand.
    """
    parser = argparse.ArgumentParser(prog="sklearn-ldp", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    spec = sub.add_parser("spec", help="write the client specification of a configuration")
    spec.add_argument("config", help="JSON or TOML (.toml) configuration")
    spec.add_argument("-o", "--output", required=True, help="the spec file to write (.json)")
    spec.set_defaults(run=command_spec)

    aggregate = sub.add_parser("aggregate", help="aggregate report files into one aggregate")
    aggregate.add_argument("reports", nargs="+", help="report files or folders")
    aggregate.add_argument("-o", "--output", required=True, help="the aggregate (.npz)")
    aggregate.add_argument("--spec", help="the spec: reports must match its mechanism; its "
                                          "categories and workload label the answers")
    aggregate.add_argument("--allow-unverified", action="store_true",
                           help="read files without a checksum (trusted origin only)")
    aggregate.set_defaults(run=command_aggregate)

    estimate = sub.add_parser("estimate", help="answers with standard errors and margins")
    estimate.add_argument("aggregate", help="an aggregate written by 'aggregate'")
    estimate.add_argument("--estimator", required=True, choices=ESTIMATORS)
    estimate.add_argument("-o", "--output", required=True, help="OUT.csv or OUT.parquet")
    estimate.add_argument("--confidence", type=_confidence, default=0.95)
    estimate.add_argument("--ranges", nargs="+", metavar="LO:HI",
                          help="closed ranges for --estimator range (default: the CDF)")
    estimate.add_argument("--allow-unverified", action="store_true",
                          help="read an aggregate without a checksum")
    estimate.set_defaults(run=command_estimate)

    plan = sub.add_parser("plan", help="users needed for a margin of error")
    plan.add_argument("spec", help="a spec written by 'spec'")
    plan.add_argument("--margin", type=_margin, default=0.01,
                      help="margin in the answers' unit (0.01: +-1 point on a share)")
    plan.add_argument("--confidence", type=_confidence, default=0.95)
    plan.add_argument("--users", type=_positive_int, help="also print the margin for N users "
                                                          "(default: the spec's n_users)")
    plan.add_argument("--queries", help="a workload name ('prefix' for the CDF) or a column")
    plan.add_argument("--simultaneous", action="store_true",
                      help="margins that hold for all the answers at once (Bonferroni)")
    plan.set_defaults(run=command_plan)

    serve = sub.add_parser("serve", help="run the reference collector (the server extra)")
    serve.add_argument("--store", required=True, help="a SQLite file, or a postgresql:// URL")
    serve.add_argument("--collection", action="append", required=True, metavar="NAME=SPEC",
                       help="a collection and its spec (written by 'spec', or a client "
                            "specification); repeatable")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (TLS at a proxy)")
    serve.add_argument("--port", type=_positive_int, default=8000)
    serve.add_argument("--max-batch-reports", type=_positive_int, default=10_000)
    serve.add_argument("--rate", type=_margin, help="batches per second per client token "
                                                     "(default: no rate limit)")
    serve.add_argument("--burst", type=_positive_int, default=10)
    serve.add_argument("--access-log", action="store_true",
                       help="the access log of uvicorn, which holds client addresses")
    serve.set_defaults(run=command_serve)

    for command in (spec, aggregate, estimate, serve):
        command.add_argument("-q", "--quiet", action="store_true",
                             help="no progress bar or messages on stderr")
    return parser


def main(argv=None):
    """Run ``sklearn-ldp`` with ``argv`` (default: the process's arguments).

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name.

    Returns
    -------
    int
        The exit status: 0 on success, 1 on a failure (one line on stderr), 2 on a usage
        error (argparse's message).

    Examples
    --------
    >>> main(["plan", "no-such-spec.json"])
    1
    """
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except CommandError as exc:
        _fail(str(exc))
        return 1
    except (ValueError, TypeError, OSError, KeyError) as exc:
        # The package's errors name the file they read (readers, loaders); OSError too.
        _fail(str(exc) if not isinstance(exc, KeyError) else f"missing field {exc}")
        return 1
    return 0


def _fail(message):
    print("sklearn-ldp: error: " + " ".join(message.split()), file=sys.stderr)


__all__ = ["build_parser", "estimate_table", "main"]
