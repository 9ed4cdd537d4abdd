"""What kpl's CMake sources define, read from the files themselves, so that the
packaging checks compare the recipe and the presets with the real build and
not with a list that could go stale."""

import pathlib
import re

# Not kpl's build: the packaging itself, and tests/consumer (a user's project).
SKIPPED_DIRECTORIES = {(".git",), ("packaging",), ("tests", "consumer")}


class CMakeSources:
    def __init__(self, source_dir):
        self.source_dir = pathlib.Path(source_dir)
        self.text = ""
        for path in sorted(self.source_dir.rglob("*")):
            relative = path.relative_to(self.source_dir)
            if relative.parts[0].startswith("build") or any(
                relative.parts[: len(skipped)] == skipped for skipped in SKIPPED_DIRECTORIES
            ):
                continue
            if path.name == "CMakeLists.txt" or path.suffix == ".cmake":
                self.text += path.read_text(errors="replace") + "\n"
        # Comments would otherwise count as uses.
        code = re.sub(r"#[^\n]*", "", self.text)
        self.options = set(re.findall(r"\boption\(\s*(\w+)", code))
        self.cache_variables = {
            name for name, body in re.findall(r"\bset\(\s*(\w+)\b([^)]*)\)", code)
            if re.search(r"\bCACHE\b", body) and not re.search(r"\bINTERNAL\b", body)
        }
        self.packages = set(re.findall(r"\bfind_package\(\s*(\w+)", code))
        self.words = set(re.findall(r"\b\w+\b", code))

    def user_settings(self):
        """kpl's own options and cache variables (KPL_*)."""
        return {n for n in self.options | self.cache_variables if n.startswith("KPL_")}

    def enable_options(self):
        return {n for n in self.options if n.startswith("KPL_ENABLE_")}

    def project_version(self):
        match = re.search(r"\bproject\(\s*kpl\s+VERSION\s+([0-9.]+)", self.text)
        if not match:
            raise SystemExit("no project(kpl VERSION ...) in the top-level CMakeLists.txt")
        return match.group(1)

    def minimum_cmake(self):
        match = re.search(r"cmake_minimum_required\(\s*VERSION\s+([0-9]+)\.([0-9]+)", self.text)
        return int(match.group(1)), int(match.group(2))

    def why_unknown(self, name):
        """None when `name`, given as -D<name>, is something kpl's configure
        reads; otherwise the reason it is not."""
        if name.startswith("KPL_"):
            if name in self.user_settings():
                return None
            return f"{name} is no option() or cache variable in kpl's CMake sources"
        root = re.fullmatch(r"(\w+)_ROOT", name)
        if root:
            if root.group(1) in self.packages:
                return None
            return f"{name}: kpl has no find_package({root.group(1)})"
        if name in CMAKE_OWN_VARIABLES:
            return None
        if name in self.words:
            return None  # read by kpl's CMake code (e.g. CMAKE_CUDA_ARCHITECTURES)
        return f"{name} appears nowhere in kpl's CMake sources"


# Variables CMake itself reads at the first configure, whatever the project.
CMAKE_OWN_VARIABLES = {
    "CMAKE_BUILD_TYPE", "CMAKE_CXX_COMPILER", "CMAKE_CXX_FLAGS", "CMAKE_CUDA_COMPILER",
}
