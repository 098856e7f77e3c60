"""geobench_data plugin: datasets (real and synthetic) and batched augmentations."""


class DataNotFound(ValueError):
    """A dataset's files are not where the run looked for them."""


__all__ = ["DataNotFound"]
