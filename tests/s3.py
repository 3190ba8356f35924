"""A moto S3 server on 127.0.0.1 for tests, with AWS variables pointed at it."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import pytest


@contextmanager
def moto_s3(bucket: str, objects: Mapping[str, bytes]) -> Iterator[str]:
    """Start a moto server, create ``bucket`` holding ``objects`` (key -> bytes), point boto3
    and binlake (BINLAKE_S3_ENDPOINT_URL) at it; yield its endpoint URL."""
    import boto3
    from moto.server import ThreadedMotoServer

    from binlake.binlog.source import reset_s3_client
    from binlake_dev.mariadb import free_port

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    with pytest.MonkeyPatch.context() as mp:
        for var in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
                    "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
            mp.delenv(var, raising=False)
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        mp.setenv("AWS_CONFIG_FILE", os.devnull)
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
        mp.setenv("BINLAKE_S3_ENDPOINT_URL", endpoint)
        reset_s3_client()
        try:
            client = boto3.client("s3", endpoint_url=endpoint)
            client.create_bucket(Bucket=bucket)
            for key, data in objects.items():
                client.put_object(Bucket=bucket, Key=key, Body=data)
            yield endpoint
        finally:
            reset_s3_client()
            server.stop()
    reset_s3_client()
