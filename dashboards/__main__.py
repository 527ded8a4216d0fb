"""python -m dashboards [--out DIR]: write the generated dashboards (default dashboards/generated/)."""
import argparse
from pathlib import Path

from dashboards.generate import GENERATED_DIR, write_all


def main():
    parser = argparse.ArgumentParser(prog="python -m dashboards", description=__doc__)
    parser.add_argument("--out", type=Path, default=GENERATED_DIR)
    for path in write_all(parser.parse_args().out):
        print(path)


if __name__ == "__main__":
    main()
