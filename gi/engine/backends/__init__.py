"""Evaluation backends: candidates in, evaluations out; in this process or on Dask workers."""
