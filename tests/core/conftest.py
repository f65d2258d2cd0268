import sys
from pathlib import Path

# Shared scene builders and reference implementations live next to the tests; a test that reuses another's
# scene imports it by folder (``from rigid.test_anisotropic_friction import ...``, a namespace package here).
sys.path.insert(0, str(Path(__file__).parent))
