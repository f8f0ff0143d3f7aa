import os
import sys

# the harness package lives next to these tests (tests/ is not a package)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
