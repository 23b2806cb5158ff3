"""The README's Python quick start runs as written: the first python block of its "## Python"
section is extracted and executed in a scratch directory (with the model it names in the cache)."""
import pathlib
import re
import subprocess
import sys

from test_model_suite import model_path

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def quick_start():
    section = README.read_text().split("\n## Python\n", 1)
    assert len(section) == 2, "README.md has no '## Python' section"
    blocks = re.findall(r"^```python\n(.*?)^```$", section[1].split("\n## ", 1)[0], re.S | re.M)
    assert blocks, "the Python section of README.md has no python block"
    return blocks[0]


def test_readme_quick_start_runs(tmp_path):
    model_path("resnet18")  # exported into the model cache when missing
    script = tmp_path / "quick_start.py"
    script.write_text(quick_start())
    ran = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "top 5 classes:" in ran.stdout and "Execution time summary" in ran.stdout
    assert "Total" in ran.stdout and "softmax max:" in ran.stdout
    assert "error: the graph has no input named 'image' (its inputs are: input" in ran.stdout
    assert (tmp_path / "resnet18.so").exists()
