"""Self-supervised objectives: SimSiam, BYOL, VICReg, Barlow Twins, DINO.

Every objective here is an ``SSLObjective``: besides the training loss it exposes
``loss_of_h(arm, views) -> HeadLoss``, the loss of the batch as a function of the online
head outputs with every stop-gradient target held constant -- what the effective-Hessian
metrics differentiate.
"""
