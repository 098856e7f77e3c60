"""The core's metrics (geobench.components.metrics) against read-outs computed by hand:
features by space and in chunks, the training samples a read-out may use, the held-out loss
over full batches; and every core metric documents its fields."""

import torch
from sklearn.neighbors import KNeighborsClassifier
from torch import nn

from geobench.components import metrics as m
from geobench.contract.interfaces import Arm, Data, MetricContext, Objective
from geobench.contract.manager import registry


class Scale(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return self.factor * x


def _blobs(seed, n):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 3
    x = torch.eye(3)[y] * 2 + 0.8 * torch.randn(n, 3, generator=g)
    return x, y


def _ctx(arm, data, step=0, augmentation=None):
    aug = augmentation or (lambda x, index, generator, view=0: x)
    return MetricContext(step, 10, "main", arm, data, None, [], aug, torch.Generator(), {})


def _data(n_train=60, n_test=30, batch_size=8) -> Data:
    xtr, ytr = _blobs(0, n_train)
    xte, yte = _blobs(1, n_test)
    return Data(xtr, ytr, xte, yte, xte, yte, 3, batch_size)


def test_features_by_space_and_in_chunks():
    arm = Arm(Scale(2.0), Scale(-1.0), Objective())
    x = torch.randn(7, 2, 3)
    assert torch.equal(m.features(arm, x, "backbone", chunk=3), 2 * x.flatten(1))
    assert torch.equal(m.features(arm, x, "head", chunk=2), -2 * x.flatten(1))


def test_nccc_uses_the_first_max_train_training_samples():
    data = _data()
    arm = Arm(nn.Identity(), nn.Identity(), Objective())
    got = m.Nccc(m.ReadoutParams(max_train=20))(_ctx(arm, data))["accuracy"]
    xtr, ytr = data.train_x[:20], data.train_y[:20]
    centres = torch.stack([xtr[ytr == c].mean(0) for c in range(3)])
    pred = torch.cdist(data.test_x, centres).argmin(1)
    assert got == int((pred == data.test_y).sum()) / len(data.test_y)


def test_knn_is_cosine_k_nearest_neighbours():
    data = _data()
    arm = Arm(nn.Identity(), nn.Identity(), Objective())
    got = m.Knn(m.KnnParams(k=5))(_ctx(arm, data))["accuracy"]
    clf = KNeighborsClassifier(n_neighbors=5, metric="cosine", algorithm="brute")
    pred = clf.fit(data.train_x.numpy(), data.train_y.numpy()).predict(data.test_x.numpy())
    assert abs(got - float((pred == data.test_y.numpy()).mean())) < 1e-12


def test_linear_probe_separates_separable_head_features():
    x = torch.cat([torch.randn(40, 2) + 6, torch.randn(40, 2) - 6])
    y = torch.cat([torch.zeros(40), torch.ones(40)]).long()
    data = Data(x, y, x, y, x, y, 2, 8)
    arm = Arm(Scale(0.0), nn.Identity(), Objective())  # backbone features carry nothing
    probe = m.LinearProbe(m.LinearProbeParams(space="head"))
    assert probe(_ctx(Arm(nn.Identity(), Scale(1.0), Objective()), data))["accuracy"] == 1.0
    assert m.LinearProbe(m.LinearProbeParams())(_ctx(arm, data))["accuracy"] == 0.5


class MeanX(Objective):
    n_views = 1

    def forward(self, arm, batch, views):
        return views[0].mean()


def test_eval_loss_averages_the_objective_over_full_held_out_batches():
    x = torch.arange(30.0).reshape(10, 3)  # row i: 3i, 3i+1, 3i+2; mean 3i + 1
    data = Data(x, torch.zeros(10), x, torch.zeros(10), x, torch.zeros(10), 1, 4)
    arm = Arm(nn.Identity(), nn.Identity(), MeanX())
    # batches of 4 test rows: rows 0-3 (mean 5.5) and 4-7 (mean 17.5); rows 8-9 are left out
    got = m.EvalLoss(m.EvalLossParams())(_ctx(arm, data))["value"]
    assert got == (5.5 + 17.5) / 2
    assert m.EvalLoss(m.EvalLossParams(max_batches=1))(_ctx(arm, data))["value"] == 5.5
    shifted = m.EvalLoss(m.EvalLossParams())(
        _ctx(arm, data, augmentation=lambda x, index, generator, view=0: x + 1))["value"]
    assert shifted == got + 1  # the views come from the augmentation


def test_effective_rank_of_rank_one_features_is_one():
    x = torch.outer(torch.arange(1.0, 9.0), torch.tensor([1.0, 2.0, 0.5]))
    data = Data(x, torch.zeros(8), x, torch.zeros(8), x, torch.zeros(8), 1, 8)
    arm = Arm(nn.Identity(), nn.Identity(), Objective())
    erank = m.EffectiveRank(m.EffectiveRankParams(samples=8))(_ctx(arm, data))["erank"]
    assert abs(erank - 1.0) < 1e-6
    diagonal = torch.diag(torch.tensor([3.0, 3.0, 3.0, 3.0]))
    same = Data(diagonal, torch.zeros(4), diagonal, torch.zeros(4), diagonal, torch.zeros(4), 1, 4)
    plain = m.EffectiveRank(m.EffectiveRankParams(samples=4, center=False))(_ctx(arm, same))
    assert abs(plain["erank"] - 4.0) < 1e-6  # equal singular values: exp(log 4)


def test_every_core_metric_documents_its_fields():
    reg = registry()
    core = [e for e in reg.entries["metrics"].values() if e.origin == "core (geobench)"]
    assert sorted(e.name for e in core) == ["effective_rank", "eval_loss", "knn",
                                            "linear_probe", "nccc"]
    for entry in core:
        assert entry.fields and all(d.description and d.direction in
                                    ("higher", "lower", "diagnostic")
                                    for d in entry.fields.values())
