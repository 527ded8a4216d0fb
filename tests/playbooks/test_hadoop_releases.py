"""The Hadoop releases Spillway installs (role common's hadoop_releases) and what role hadoop_install makes of each:
the pom Ansible renders from its template (real Ansible, nothing installed), the Java each release needs against its
own class files (recorded, and checked against the install where this machine has it), and preflight's java row for it."""
import importlib.util
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
import yaml

from spillway import PLAYBOOKS, REPO, versions

BIN = Path(sys.executable).parent
ROLE = PLAYBOOKS / "roles" / "hadoop_install"
POM = "{http://maven.apache.org/POM/4.0.0}"
JDK17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")
# The class file major version of each Java release that is a java_min here.
CLASS_MAJOR = {8: 52, 11: 55, 17: 61, 21: 65}


def test_hadoop_3_5_0_is_offered_beside_3_4_2_each_saying_its_java_and_its_examples_jar():
    assert versions.hadoop_releases() == ["3.4.2", "3.5.0"]
    assert versions.hadoop_release("3.4.2") == {"java_min": 8, "examples": "3.4.2"}
    # 3.5.0's classes are Java 17's, and Maven Central here has no hadoop-mapreduce-examples 3.5.0
    assert versions.hadoop_release("3.5.0") == {"java_min": 17, "examples": "3.4.2"}
    # a release whose examples are another's names one that carries its own (its jar is known to resolve)
    for release in versions.hadoop_releases():
        examples = versions.hadoop_release(release)["examples"]
        assert versions.hadoop_release(examples)["examples"] == examples, release


def render_pom(tmp_path, hadoop):
    """Role hadoop_install's pom for a release, rendered by Ansible's template module with role common's versions
    and the role's defaults (as provisioning renders it)."""
    variables = tmp_path / "vars.json"
    variables.write_text(json.dumps({"spillway_versions": {"spark": ["3.5.6"], "hadoop": hadoop},
                                     "hadoop_home": f"/opt/spillway/hadoop-{hadoop}", "spillway_cache_dir": "/c"}))
    dest = tmp_path / f"pom-{hadoop}.xml"
    proc = subprocess.run(
        [str(BIN / "ansible"), "localhost", "-c", "local", "-i", "localhost,", "-m", "ansible.builtin.template",
         "-a", f"src={ROLE / 'templates' / 'pom.xml.j2'} dest={dest}",
         "-e", f"@{versions.VERSIONS_FILE}", "-e", f"@{ROLE / 'defaults' / 'main.yml'}", "-e", f"@{variables}",
         "-e", f"ansible_python_interpreter={sys.executable}"],
        cwd=REPO, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return ET.parse(dest).getroot()


def dependencies(pom):
    return {d.findtext(f"{POM}artifactId"): (d.findtext(f"{POM}version"),
                                             tuple((e.findtext(f"{POM}groupId"), e.findtext(f"{POM}artifactId"))
                                                   for e in d.iter(f"{POM}exclusion")))
            for d in pom.iter(f"{POM}dependency")}


def test_the_pom_of_3_5_0_takes_3_4_2s_examples_jar_alone_and_everything_else_of_3_5_0(tmp_path):
    pom = render_pom(tmp_path, "3.5.0")
    assert pom.findtext(f"{POM}properties/{POM}hadoop.version") == "3.5.0"
    deps = dependencies(pom)
    assert deps.pop("hadoop-mapreduce-examples") == ("3.4.2", (("*", "*"),))  # without 3.4.2's Hadoop jars
    assert set(deps) == set(versions_of_role()["hadoop_install_artifacts"])
    assert set(deps.values()) == {("${hadoop.version}", ())}


def test_the_pom_of_3_4_2_is_the_one_it_always_was(tmp_path):
    """Its own examples, last and closure included, as when the examples were one of the artifacts: an unchanged pom
    keeps every machine's 3.4.2 install (role maven_closure reinstalls on any change)."""
    pom = render_pom(tmp_path, "3.4.2")
    deps = dependencies(pom)
    assert list(deps)[-1] == "hadoop-mapreduce-examples"
    assert set(deps.values()) == {("${hadoop.version}", ())}
    assert "exclusion" not in (tmp_path / "pom-3.4.2.xml").read_text()


def versions_of_role():
    return yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())


# Each release's class file major version, recorded from its hadoop-common jar on Maven Central: every release is
# checked on every machine, and an installed jar must agree with the record.
CLASS_MAJORS = json.loads((REPO / "tests" / "fixtures" / "hadoop" / "hadoop-common-class-majors.json").read_text())


def first_hadoop_class(jar_path):
    """The name and class file major version of the jar's first org/apache/hadoop/ class."""
    with zipfile.ZipFile(jar_path) as jar:
        name = next(n for n in jar.namelist() if n.startswith("org/apache/hadoop/") and n.endswith(".class"))
        header = jar.read(name)[:8]
    return name, int.from_bytes(header[6:8], "big")


@pytest.mark.parametrize("release", versions.hadoop_releases())
def test_java_min_is_the_java_of_the_release_s_own_class_files(release):
    assert release in CLASS_MAJORS, f"record hadoop-common {release}'s class major in {CLASS_MAJORS['_recorded']}"
    assert CLASS_MAJORS[release]["major"] == CLASS_MAJOR[versions.hadoop_release(release)["java_min"]]
    common = Path(f"/opt/spillway/hadoop-{release}/lib/hadoop-common-{release}.jar")
    if common.exists():
        assert first_hadoop_class(common) == (CLASS_MAJORS[release]["class"], CLASS_MAJORS[release]["major"])


def preflight():
    spec = importlib.util.spec_from_file_location(
        "spillway_preflight", PLAYBOOKS / "roles" / "preflight" / "library" / "spillway_preflight.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not (JDK17 / "bin" / "java").exists(), reason="this machine's OpenJDK 17 is the cluster's Java")
def test_preflight_checks_the_java_of_the_hadoop_release_too():
    check = preflight().check_java
    row = check(str(JDK17), "openjdk-17-jdk-headless", {"3.5.6": 17}, {"3.5.0": versions.hadoop_release("3.5.0")["java_min"]})
    assert row["status"] == "ok", row
    row = check(str(JDK17), "openjdk-17-jdk-headless", {"3.5.6": 17}, {"9.9.9": 21})
    assert row["status"] == "FAIL" and "Hadoop 9.9.9 needs Java 21+" in row["detail"], row
    assert row["fix"] == "set java_home to a Java 21 or newer, or set spillway_versions.hadoop to another release", row


@pytest.mark.parametrize("spark_version, expected", [(None, "3.5.6"), ("4.2.0", "4.2.0")])
def test_a_run_of_no_spark_passes_a_null_release_and_its_play_takes_the_default_lines_spark(
        tmp_path, spark_version, expected):
    """The runner passes a run's versions.spark as the extra var spark_version: null for TeraSort on MapReduce. Role
    common's defaults must still name an installed Spark (a null once failed the step's play: `no element None`)."""
    variables = tmp_path / "vars.json"
    variables.write_text(json.dumps({"spillway_versions": {"spark": ["3.5.6", "4.2.0"], "hadoop": "3.5.0"},
                                     "spark_version": spark_version}))
    defaults = PLAYBOOKS / "roles" / "common" / "defaults" / "main"
    proc = subprocess.run(
        [str(BIN / "ansible"), "localhost", "-c", "local", "-i", "localhost,", "-m", "ansible.builtin.debug",
         "-a", "msg={{ spark_home }}|{{ spark_scala_version }}|{{ spark_version | default('', true) }}",
         "-e", f"@{defaults / 'versions.yml'}", "-e", f"@{defaults / 'main.yml'}", "-e", f"@{variables}",
         "-e", f"ansible_python_interpreter={sys.executable}"],
        cwd=REPO, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert f"msg: /opt/spillway/spark-{expected}|2.13|{spark_version or ''}\n" in proc.stdout, proc.stdout
