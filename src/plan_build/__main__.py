"""`python -m plan_build` runs the same program as the `plan-build` script."""

from plan_build.main import main

main()
