"""Deployment: shards of reports in files, aggregated from disk, on Dask, merged, then fitted
==========================================================================================

A telemetry team collects, each day, the LDP reports of the app its users opened most. The
collectors write the reports to Parquet (or CSV) shards; the server aggregates the shards
from disk in bounded memory, or on a Dask cluster when one is available, merges the
aggregates (exactly: they are integer counts) and fits an estimator, drawn with its 95%
intervals (:class:`~sklearn_ldp.HistogramDisplay`). The aggregate and the
fitted estimator are saved for the next run.

Run:  python examples/deployment.py      (a few seconds; ~15 s more with Dask installed)
"""

# The documentation build runs this example alone: it starts Dask processes of its own.
# sphinx_gallery_parallel = False

import os
import pickle
import tempfile

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_ldp import AggregatedReports, HistogramDisplay, LDPEncoder, WorkloadEstimator
from sklearn_ldp.deploy.io import aggregate_files, write_reports

APPS = ["mail", "maps", "music", "news", "photos", "video"]
TRUE_SHARES = [0.30, 0.10, 0.20, 0.15, 0.05, 0.20]


def run(folder):
    encoder = LDPEncoder(categories={"app": APPS}, strategy="oue", epsilon=1.0,
                         random_state=0).fit()  # seeded: a simulation of the clients
    try:
        import pyarrow  # noqa: F401
        suffix = "parquet"
    except ImportError:
        suffix = "csv"

    # ------------------------------------------------------------ clients -> shards on disk
    rng = np.random.default_rng(1)
    for day in range(4):
        users = pd.DataFrame({"app": rng.choice(APPS, size=50_000, p=TRUE_SHARES)})
        write_reports(encoder.transform(users), os.path.join(folder, f"day-{day}.{suffix}"))
    print(f"4 shards of 50,000 reports in {folder}: {sorted(os.listdir(folder))}")

    # ------------------------------------------------------------ aggregate from disk
    total = aggregate_files(folder, domain=encoder.domain_, chunk_size=2**15, progress=True)
    print(f"aggregated {len(total):,} reports from disk")

    # ------------------------------------------------------------ the same on Dask
    try:
        import dask.dataframe as dd
        from dask.distributed import Client, LocalCluster

        from sklearn_ldp.deploy.distributed import aggregate_dask
    except ImportError:
        print("dask is not installed: skipping the cluster part")
    else:
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
                Client(cluster):
            if suffix == "parquet":
                frame = dd.read_parquet(os.path.join(folder, "*.parquet"))
            else:
                frame = dd.read_csv(os.path.join(folder, "*.csv"), comment="#")
            on_cluster = aggregate_dask(frame, encoder.mechanism_)
        same = on_cluster.statistic.tobytes() == total.statistic.tobytes()
        print(f"Dask ({frame.npartitions} partitions) equals the single machine bit for bit: "
              f"{same}")

    # ------------------------------------------------------------ merge two servers' shards
    first = aggregate_files(os.path.join(folder, f"day-[01].{suffix}"))
    second = aggregate_files(os.path.join(folder, f"day-[23].{suffix}"))
    merged = AggregatedReports.merge([first, second])
    print("merged shards equal the aggregate of all files:",
          bool(np.array_equal(merged.statistic, total.statistic)))

    # ------------------------------------------------------------ fit, save, reload
    estimator = WorkloadEstimator(normalize=True).fit(total)
    table = pd.DataFrame({"estimate": estimator.answers_.to_numpy(), "true share": TRUE_SHARES,
                          "std error": np.sqrt(estimator.expected_error_["worst_case"])},
                         index=estimator.answers_.index)
    print(table.round(4))
    HistogramDisplay.from_estimator(estimator, true_values=TRUE_SHARES)  # 95% intervals
    total.save(os.path.join(folder, "aggregate.npz"))
    restored_total = AggregatedReports.load(os.path.join(folder, "aggregate.npz"))
    restored = pickle.loads(pickle.dumps(estimator))
    print("reloaded aggregate and unpickled estimator give the same answers:",
          bool(np.array_equal(WorkloadEstimator(normalize=True).fit(restored_total).answers_,
                              restored.answers_)))


def main():
    with tempfile.TemporaryDirectory(prefix="sklearn_ldp_deployment_") as folder:
        run(folder)
    plt.show()


if __name__ == "__main__":
    main()
