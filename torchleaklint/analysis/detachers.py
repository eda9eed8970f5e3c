"""What cuts or never carries an autograd graph: detaching methods, non-tensor
attributes, Python conversions, numeric namespaces, ``torch`` factories and index results."""

DETACH_METHODS = frozenset({"item", "tolist", "numpy", "detach", "detach_", "size", "dim", "numel",
                            "nelement", "element_size", "stride", "argmax", "argmin", "argsort",
                            "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite",
                            "nonzero", "bool", "long", "int", "short", "byte", "char", "data_ptr",
                            "is_contiguous", "get_device", "equal", "allclose", "any", "all",
                            "count_nonzero", "__len__", "backward", "zero_", "storage",
                            "untyped_storage", "isclose", "sign", "has_names", "type", "state_dict",
                            "asnumpy", "cpu_numpy", "multinomial", "bernoulli", "bernoulli_",
                            # fresh tensors shaped like the receiver, with no graph of their own
                            "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})
# Draws from a ``torch.distributions`` object carry no graph (``rsample`` does).
DISTRIBUTION_DRAWS = frozenset({"sample", "sample_n", "enumerate_support"})
NON_CARRYING_ATTRS = frozenset({"shape", "dtype", "device", "grad", "data", "requires_grad", "param_groups",
                                "is_leaf", "ndim", "grad_fn", "layout", "is_cuda", "names",
                                "output_nr", "_version", "is_sparse", "itemsize", "nbytes", "batch_size",
                                "size_", "ndims"})
DETACH_BUILTINS = frozenset({"float", "int", "bool", "len", "str", "round", "repr", "format",
                             "isinstance", "hash", "id", "type", "print", "range"})
NUMERIC_NAMESPACES = ("numpy.", "math.", "statistics.", "np.")
TORCH_NON_CARRYING = frozenset({"tensor", "zeros", "ones", "empty", "full", "arange", "linspace",
                                "zeros_like", "ones_like", "empty_like", "full_like", "rand",
                                "randn", "randint", "rand_like", "randn_like", "randint_like",
                                "randperm", "eye", "argmax", "argmin", "argsort", "eq", "ne", "lt",
                                "le", "gt", "ge", "isnan", "isinf", "isfinite", "numel", "is_tensor",
                                "manual_seed", "no_grad", "from_numpy", "save", "load", "equal",
                                "allclose", "count_nonzero", "bucketize", "searchsorted", "bincount",
                                "multinomial", "bernoulli", "normal", "poisson", "isclose",
                                "as_strided_", "get_default_dtype", "is_grad_enabled", "sign",
                                "logical_and", "logical_or", "logical_not", "nonzero", "where_"})
# ``values, indices = x.max(dim)`` — the second element is an index tensor.
VALUES_INDICES = frozenset({"max", "min", "topk", "sort", "kthvalue", "mode", "median", "cummax",
                            "cummin", "nanmedian"})
COPYING_BUILTINS = frozenset({"list", "tuple", "sum", "max", "min", "sorted", "reversed", "next",
                              "iter", "dict", "set", "zip", "map", "filter"})
