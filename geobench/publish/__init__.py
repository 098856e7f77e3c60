"""What every command publishes goes through here: the one file writer (``output``) and
markdown tables whose cells cannot break the table (``markdown``)."""
