"""The studies the README shows (`clusterdse-study NAME`, module clusterdse.study): summaries
of a study's store or CSV that a test re-runs."""
