"""cli: the command-line plumbing the Invoke tasks are declared with: strict flags
(strict.py) and the help screens (helptext.py)."""
