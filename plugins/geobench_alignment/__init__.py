"""geobench_alignment: supervised vs self-supervised contrastive alignment (CL, NSCL, SupCon,
CE) and the representation-similarity metrics that compare them."""
