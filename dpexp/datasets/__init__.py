"""Dataset registry (datasets.yaml), checksummed downloads, parsers and generators."""

from dpexp.datasets.core import Dataset, load_dataset
from dpexp.datasets.registry import DatasetInfo, all_datasets, get_dataset_info

__all__ = ["Dataset", "DatasetInfo", "all_datasets", "get_dataset_info", "load_dataset"]
