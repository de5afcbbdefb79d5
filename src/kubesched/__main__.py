"""`python -m kubesched`: the same command line as the `kubesched` script."""

from kubesched.cli.main import main

main()
