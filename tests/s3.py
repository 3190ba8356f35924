"""A moto S3 server on 127.0.0.1 for tests, with AWS variables pointed at it."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest


def _moto_reset(endpoint: str) -> None:
    """Empty every moto backend (moto's reset API)."""
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"),
                           timeout=30).read()


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
    # moto's state is the process's, not the server's: buckets and objects of an earlier
    # test's server (the same bucket name, say) would still be there.  Start empty.
    _moto_reset(endpoint)
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
            _moto_reset(endpoint)
            server.stop()
    reset_s3_client()


@contextmanager
def signing_moto(log_dir: Path) -> Iterator[tuple[str, str, str]]:
    """A moto server (a process) that checks every request's SigV4 signature, as S3 does
    (moto's IAM mode: ``INITIAL_NO_AUTH_ACTION_COUNT``): an IAM user with an access key and
    a policy allowing everything is made in the first three requests, which are not checked;
    every request after them must be signed with that key.  Yields (endpoint, key id,
    secret).  The AWS variables of this process are not touched."""
    import json
    import subprocess
    import sys
    import time

    import boto3

    from binlake_dev.mariadb import free_port

    port = free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "3"}
    with open(log_dir / "moto.log", "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                                 str(port)], env=env, stdout=out, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                           aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
        deadline = time.monotonic() + 30
        while True:
            try:
                iam.create_user(UserName="binlake")
                break
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.2)
        key = iam.create_access_key(UserName="binlake")["AccessKey"]
        iam.put_user_policy(UserName="binlake", PolicyName="all", PolicyDocument=json.dumps(
            {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        yield endpoint, key["AccessKeyId"], key["SecretAccessKey"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
