"""`python -m gangplan` runs the command line."""

from gangplan.cli import main

main()
