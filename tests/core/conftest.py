import sys
from pathlib import Path

# Shared scene builders and reference implementations live next to the tests.
sys.path.insert(0, str(Path(__file__).parent))
