"""The transaction layer: boundaries, reconstruction, XA pairing, validity findings.

Pure library code on top of the decoder (no Spark, no Airflow): the Spark job runs it per
file or per transaction-aligned byte range, the CLI runs it on a laptop.
"""
