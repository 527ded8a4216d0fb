"""Preflight's java row (role preflight's spillway_preflight module) against the Spark releases a cluster installs,
with the real JDKs of this machine: Debian's OpenJDK 17 and Temurin 25."""
import importlib.util
from pathlib import Path

import pytest

from spillway import PLAYBOOKS, versions

MODULE = PLAYBOOKS / "roles" / "preflight" / "library" / "spillway_preflight.py"
JDK17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")
JDK25 = Path("/usr/lib/jvm/temurin-25-jdk-amd64")


def preflight():
    spec = importlib.util.spec_from_file_location("spillway_preflight", MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def needs(*releases):
    """What the preflight task passes: release -> its java_min (role common's spark_releases)."""
    return {release: versions.spark_releases()[release]["java_min"] for release in releases}


@pytest.mark.skipif(not (JDK17 / "bin" / "java").exists(), reason="this machine's OpenJDK 17 is the cluster's Java")
def test_java_17_runs_both_spark_lines():
    row = preflight().check_java(str(JDK17), "openjdk-17-jdk-headless", needs("3.5.6", "4.2.0"))
    assert row["status"] == "ok" and 'version "17.' in row["detail"], row


@pytest.mark.skipif(not (JDK17 / "bin" / "java").exists(), reason="this machine's OpenJDK 17 is the cluster's Java")
def test_a_release_needing_a_newer_java_fails_naming_it_and_the_fix():
    row = preflight().check_java(str(JDK17), "openjdk-17-jdk-headless", {"3.5.6": 17, "9.0.0": 21})
    assert row["status"] == "FAIL", row
    assert "Spark 9.0.0 needs Java 21+" in row["detail"] and "3.5.6" not in row["detail"], row
    assert "set java_home to a Java 21 or newer, or leave 9.0.0 out of spillway_versions.spark" == row["fix"], row


@pytest.mark.skipif(not (JDK25 / "bin" / "java").exists(), reason="needs this machine's Temurin 25")
def test_a_newer_java_satisfies_an_older_minimum():
    row = preflight().check_java(str(JDK25), "openjdk-17-jdk-headless", {"9.0.0": 21})
    assert row["status"] == "ok" and 'version "25' in row["detail"], row
