"""The harness's --shape_file option, for the child that test_spawn.py runs under warmup-spawn."""


def pytest_addoption(parser):
    parser.addoption("--shape_file", action="store", default="", help="shape file (YAML)")
