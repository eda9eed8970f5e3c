"""The probes the harness and the watcher share, on real torch (CPU) and a faked CUDA API."""

from __future__ import annotations

import gc

import pytest

torch = pytest.importorskip("torch")

from torchleaklint.harness import probes  # noqa: E402


def test_autograd_nodes_counts_each_reachable_node_once():
    w = torch.randn(3, 3, requires_grad=True)
    h = (w * 2).relu()
    out = h.sum() + h.mean()
    # sum, mean, relu, mul, AccumulateGrad(w), add: shared `h` is counted once
    assert probes.autograd_nodes([out, h]) == 6
    assert probes.autograd_nodes([out.detach(), w]) == 0


def test_a_kept_graph_shows_up_in_the_census():
    gc.collect()  # graphs of earlier tests awaiting the cycle collector are not this test's
    w = torch.randn(8, requires_grad=True)
    before = probes.autograd_nodes(probes.live_tensors())
    kept = [(w * i).sum() for i in range(5)]
    after = probes.autograd_nodes(probes.live_tensors())
    assert after - before == 5 * 2 + 1  # mul + sum per kept loss, one AccumulateGrad for w
    del kept


def test_a_sample_of_given_tensors_skips_the_scan():
    w = torch.randn(8, requires_grad=True)
    kept = [(w * i).sum() for i in range(3)]
    seen = []
    sampler = probes.Sampler("cpu")
    sampler.begin(collect=False)
    sample = sampler.sample(census=lambda objects, tensors: seen.append((objects, len(tensors))),
                            tensors=lambda: list(kept))
    assert (sample.tensors, sample.nodes, sample.tensor_bytes) == (3, 3 * 2 + 1, 3 * 4)
    assert seen == [(None, 3)]  # no object scan to look at
    assert sampler.samples_taken == 0  # full collections are paced by scans only


def test_tensor_bytes_counts_shared_storage_once():
    base = torch.zeros(1024)
    assert probes.tensor_bytes([base, base[:10], base.view(32, 32)]) == 4096


@pytest.mark.skipif(probes.heap_in_use() is None, reason="glibc mallinfo2 not available")
def test_heap_in_use_follows_allocations():
    before = probes.heap_in_use()
    block = torch.ones(1 << 20)  # 4 MiB
    assert probes.heap_in_use() - before >= 4 << 20
    del block


class FakeCuda:
    """Records the order of calls so the test can check each read is synchronised."""

    def __init__(self):
        self.calls = []
        self.allocated, self.peak, self.reserved = 1000, 5000, 8192

    def synchronize(self, device=None):
        self.calls.append("synchronize")

    def memory_allocated(self, device=None):
        self.calls.append("memory_allocated")
        return self.allocated

    def max_memory_allocated(self, device=None):
        self.calls.append("max_memory_allocated")
        return self.peak

    def memory_reserved(self, device=None):
        self.calls.append("memory_reserved")
        return self.reserved

    def empty_cache(self):
        self.calls.append("empty_cache")

    def reset_peak_memory_stats(self, device=None):
        self.calls.append("reset_peak_memory_stats")


def test_cuda_counters_synchronise_before_reading_and_reset_the_peak():
    counters = probes.CudaCounters("cuda:0")
    fake = counters.cuda = FakeCuda()
    assert counters.read() == {"cuda_allocated": 1000, "cuda_reserved": 8192, "cuda_step_peak": 4000}
    assert fake.calls[0] == "synchronize"
    assert fake.calls.index("empty_cache") < fake.calls.index("memory_reserved")
    counters.reset_peak()
    assert fake.calls[-2:] == ["synchronize", "reset_peak_memory_stats"]


def test_sampler_on_cuda_fills_the_cuda_fields(monkeypatch):
    fake = FakeCuda()
    sampler = probes.Sampler("cpu")
    sampler.cuda = probes.CudaCounters.__new__(probes.CudaCounters)
    sampler.cuda.cuda, sampler.cuda.device = fake, "cuda"
    sampler.begin()
    sample = sampler.sample(queue=3)
    assert (sample.cuda_allocated, sample.cuda_reserved, sample.cuda_step_peak) == (1000, 8192, 4000)
    assert sample.observed == {"queue": 3.0}
    assert fake.calls[-1] == "reset_peak_memory_stats"


def test_child_environment_fixes_the_mmap_threshold():
    env = probes.child_environment()
    assert env["MALLOC_MMAP_THRESHOLD_"] == "65536"
    assert env["MPLBACKEND"] == "Agg"
