"""A static-files finder for Plotly's JS bundle, read from the installed plotly package.

The bundle (about 4 MB) ships inside the plotly wheel pinned in requirements.txt; serving it
from there keeps it out of the repository and in step with the package version, and the
dashboard needs no CDN (clusters often have no internet). Only the one file is exposed: the
package's folder also holds data sets and templates that have no business under /static/.
"""
from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

STATIC_PATH = "plotly/plotly.min.js"
BUNDLE_DIR = Path(plotly.__file__).parent / "package_data"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=str(BUNDLE_DIR))
        self.storage.prefix = "plotly"

    def check(self, **kwargs):
        return []

    def find(self, path, find_all=False, **kwargs):
        if path != STATIC_PATH:
            return []
        found = str(BUNDLE_DIR / "plotly.min.js")
        return [found] if find_all else found

    def list(self, ignore_patterns):
        yield "plotly.min.js", self.storage
