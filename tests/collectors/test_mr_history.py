import importlib.machinery
import importlib.util

from conftest import REPO


def load_stop():
    """collectors/mr-history/stop is a script without .py: load it as a module without running it."""
    path = REPO / "collectors" / "mr-history" / "stop"
    loader = importlib.machinery.SourceFileLoader("mr_history_stop", str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    source = path.read_text().replace("\nguarded(stop)\n", "\n")
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def test_jobs_are_selected_by_the_finish_time_in_the_jhist_name(fixtures):
    stop = load_stop()
    (jhist,) = [p.name for p in (fixtures / "mr-history").glob("*.jhist")]
    job = jhist.split("-", 1)[0]
    done = stop.finish_ms(jhist) / 1000
    files = [(0.0, f"/h/{jhist}"), (0.0, f"/h/{job}_conf.xml"), (0.0, f"/h/{job}.summary"),
             (0.0, "/h/job_1_0009-1-root-Old-1000-1-0-SUCCEEDED-default-1.jhist")]
    assert stop.select_jobs(files, done - 1) == {job: [f"/h/{jhist}", f"/h/{job}_conf.xml"]}
    assert stop.select_jobs(files, done + 1) == {}
    assert (fixtures / "mr-history" / f"{job}_conf.xml").exists()

def test_history_dirs_come_from_mapred_site(tmp_path):
    stop = load_stop()
    assert stop.history_dirs(tmp_path / "absent.xml") == [
        "/tmp/hadoop-yarn/staging/history/done", "/tmp/hadoop-yarn/staging/history/done_intermediate"]
    site = tmp_path / "mapred-site.xml"
    site.write_text("<configuration><property><name>mapreduce.jobhistory.done-dir</name>"
                    "<value>/spillway/mr-history/done</value></property></configuration>")
    assert stop.history_dirs(site)[0] == "/spillway/mr-history/done"

