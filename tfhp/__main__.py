"""`python -m tfhp`: the benchmark command (see tfhp.cli)."""
from tfhp import cli

if __name__ == '__main__':
    cli.run_main()
