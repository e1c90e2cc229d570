"""The estimators: one scikit-learn class per library method, generated from
one table (METHODS below). A class stores its parameters and nothing else;
fit() makes an nle_estimator of its method, sets every parameter that is
not None by the library option's name, as text, and lets the library check
it, choose what is automatic and run. None always means "the library's
default" (its choice, reported in report_["options"] after a fit).

Parameter names: those a scikit-learn, umap-learn or openTSNE user knows
where the library has the same thing (n_components -> dim, n_neighbors ->
neighbors, max_iter -> max-iters, early_exaggeration -> exaggeration, ...);
every other parameter is the library option of the same name with '-' as
'_' (pca_candidates -> pca-candidates), except lambda_value -> lambda (a
Python keyword, and a name ending in '_' reads as a fitted attribute to
scikit-learn)."""

import numbers
import os
import re

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, ClusterMixin, TransformerMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted

import keyword

from . import _core

# --- the table -------------------------------------------------------------------------

# A parameter is "python_name" (its library option: the name with '_' as
# '-'), "python_name:library-option", or "python_name:@field" for an array
# that goes in the fit's input (nle_estimator_input's init, weights).
# A method's row: its library name, the class, its kind, what it is, its
# parameters, whether it has a reverse map (inverse_transform: EE's and
# t-EE's f(x), defined with wneg="sqdist"; PCA's; kernel eigenmaps' G+(y))
# and a map for new points (transform: all but the SMACOF family, whose
# fits keep no model).
KNN_SEARCH = ["knn_method", "trees", "leaf_size", "max_candidates", "knn_iters", "knn_delta"]
KNN = KNN_SEARCH + ["pca", "pca_candidates"]

EMBED_MAIN = ["n_components:dim", "perplexity", "n_neighbors:neighbors", "init", "learning_rate",
              "max_iter:max-iters", "early_exaggeration:exaggeration",
              "early_exaggeration_iter:exaggeration-iters"]
EMBED_REST = ["final_learning_rate", "momentum", "gains", "init_scale", "tol", "x_tol", "grad_tol", "time_budget",
              "lambda_value:lambda", "repulsion", "theta", "fft_order", "fft_box", "fgt_order", "fgt_reach",
              "accuracy_iters", "optimizer", "step", "kappa", "sdm_tol", "sdm_iters", "c1", "shrink"] + KNN
EE_ONLY = ["wneg", "wneg_dims", "homotopy", "lambda_start", "lambda_bounds"]
SIGMA = ["sigma"]

GRAPH = ["n_neighbors:neighbors", "radius", "affinity", "perplexity", "sigma", "tuning_k", "symmetrize",
         "components", "eigen_solver:solver", "tol"] + KNN
LLL = ["landmarks", "kz", "landmark_method", "landmark_graph", "reg"]
SMACOF = ["n_init:starts", "max_iter:max-iters", "tol", "init:@init"]
KERNEL = ["kernel", "gamma", "degree", "coef0"]  # kernel LDA's: dense
SPARSE_KERNEL = KERNEL + ["kernel_neighbors"]  # kernel PCA's

# What every class takes besides its method's options: the library's
# common options and the context's settings.
COMMON = ["metric", "keep_model"]
CONTEXT = ["random_state", "n_jobs", "verbose", "max_memory", "comm"]
# The context's settings as the library's messages name them (the tool's options).
CONTEXT_OPTIONS = {"seed": "random_state", "threads": "n_jobs", "verbose": "verbose", "max-memory": "max_memory"}


class _Alias:
    """A parameter scikit-learn 1.2 spells differently: given (not None), it
    sets `target` (a parameter of the class) to values[value] (or value
    itself, for a name values lacks)."""

    def __init__(self, target, about, values=None):
        self.target = target
        self.about = about
        self.values = values or {}


class _Own:
    """A parameter of the Python class alone, used by the class before the
    library sees the input (scikit-learn's spellings of a choice)."""

    def __init__(self, default, type_, about):
        self.default = default
        self.type = type_
        self.about = about


# scikit-learn 1.2's TSNE parameter names (TypeErrors otherwise)
TSNE_ALIASES = {
    "n_iter": _Alias("max_iter", "scikit-learn's name of max_iter"),
    "method": _Alias("repulsion", "scikit-learn's choice of repulsion: 'barnes_hut' is repulsion='bh', 'exact' "
                                  "repulsion='exact'", {"barnes_hut": "bh"}),
    "angle": _Alias("theta", "scikit-learn's name of theta (Barnes-Hut's opening angle)"),
    "min_grad_norm": _Alias("grad_tol", "scikit-learn's stop on the gradient: grad_tol (the library stops when "
                                        "every gradient entry is below it; scikit-learn when the gradient's norm "
                                        "is)"),
}
CLUSTER_OWN = {
    "gamma": _Own(1.0, "float", "affinity='rbf': the kernel exp(-gamma |x - y|^2), as scikit-learn's"),
    "assign_labels": _Own("kmeans", "str", "how the spectral coordinates become labels: 'kmeans' (the library's "
                                           "k-means with k-means++ restarts; scikit-learn's 'discretize' and "
                                           "'cluster_qr' are not offered)"),
}
# scikit-learn's affinity values for SpectralClustering, as the library's
RBF_BYTES_PER_PAIR = 16  # the full graph's distances and weights (float32 + int32 + double)


class _Spec:
    def __init__(self, method, cls, kind, about, params, inverse=False, transform=True, array_init=False,
                 aliases=None, own=None, defaults=None, dtype=np.float64, notes=None):
        self.method = method
        self.cls = cls
        self.kind = kind  # "embedding", "cluster", "supervised" or "graph"
        self.about = about
        self.aliases = dict(aliases or {})
        self.own = dict(own or {})
        self.notes = dict(notes or {})  # a class's own remark on a parameter
        self.py_defaults = dict(defaults or {})  # where the class follows scikit-learn, not the library
        self.dtype = dtype  # of embedding_ and transform's result (scikit-learn's TSNE: float32)
        self.params = []  # (python name, library option)
        self.names = dict(CONTEXT_OPTIONS)  # library option -> Python parameter, for the library's messages
        for p in params + COMMON:
            py, _, libname = p.partition(":")
            self.add(py, libname or py.replace("_", "-"))
        self.inverse = inverse
        self.transform = transform  # a map for new points
        # parameters that may be arrays, which the fit's input then carries:
        # the "@" ones, and init where the option also takes a name
        self.arrays = {py for py, libname in self.params if libname.startswith("@")}
        if array_init:
            self.arrays.add("init")

    def add(self, py, libname):
        self.params.append((py, libname))
        if not libname.startswith("@"):
            self.names[libname] = py


METHODS = [
    _Spec("tsne", "TSNE", "embedding",
          "t-SNE (van der Maaten and Hinton 2008) with nlembed's defaults: entropic affinities on the kNN "
          "graph, fixed-rate steps with early exaggeration, FFT-interpolated repulsion for large N",
          EMBED_MAIN + SIGMA + EMBED_REST, array_init=True, aliases=TSNE_ALIASES, dtype=np.float32),
    _Spec("tee", "TEE", "embedding", "t-distributed elastic embedding (t-EE)",
          EMBED_MAIN + SIGMA + EMBED_REST + EE_ONLY, inverse=True, array_init=True),
    _Spec("ee", "EE", "embedding", "the elastic embedding (Carreira-Perpinan 2010)",
          EMBED_MAIN + SIGMA + EMBED_REST + EE_ONLY, inverse=True, array_init=True),
    _Spec("ssne", "SSNE", "embedding", "symmetric SNE", EMBED_MAIN + SIGMA + EMBED_REST, array_init=True),
    _Spec("sne", "SNE", "embedding", "stochastic neighbour embedding (Hinton and Roweis 2003)",
          EMBED_MAIN + EMBED_REST, array_init=True),
    _Spec("pca", "PCA", "embedding", "principal component analysis, exact or randomised",
          ["n_components:dim", "center", "whiten", "svd_solver:solver", "n_oversamples:oversample",
           "iterated_power:power-iters"], inverse=True),
    _Spec("knn", "KNNGraph", "graph",
          "k-nearest-neighbour graph, exact or approximate: graph_ holds each point's k nearest (itself "
          "excluded) with their squared distances, as `nlembed knn` writes it",
          ["n_neighbors:neighbors"] + KNN_SEARCH, transform=False),
    _Spec("affinity", "Affinities", "graph",
          "affinity matrix on the kNN graph: entropic (each point's bandwidth set by the perplexity, "
          "dissertation ch. 2; betas_ the precisions) by default, or a Gaussian, binary, inverse-distance or "
          "self-tuning kernel",
          ["n_neighbors:neighbors", "perplexity", "kind"] + KNN_SEARCH, transform=False),
    _Spec("le", "LaplacianEigenmaps", "embedding",
          "Laplacian eigenmaps (Belkin and Niyogi 2003), exact or by Locally Linear Landmarks",
          ["n_components:dim"] + GRAPH + ["laplacian"] + LLL),
    _Spec("lle", "LLE", "embedding", "locally linear embedding (Roweis and Saul 2000)",
          ["n_components:dim"] + GRAPH + ["reg"]),
    _Spec("mlle", "MLLE", "embedding", "modified LLE (Zhang and Wang 2007)",
          ["n_components:dim"] + GRAPH + ["reg"]),
    _Spec("ltsa", "LTSA", "embedding", "local tangent space alignment (Zhang and Zha 2004)",
          ["n_components:dim"] + GRAPH),
    _Spec("hlle", "HLLE", "embedding", "Hessian LLE (Donoho and Grimes 2003)",
          ["n_components:dim"] + GRAPH),
    _Spec("isomap", "Isomap", "embedding",
          "Isomap (Tenenbaum, de Silva and Langford 2000), or landmark Isomap with landmarks > 0",
          ["n_components:dim"] + GRAPH + ["landmarks"],
          notes={"n_neighbors": "10, not scikit-learn's 5: the tool's default, whose results the class reproduces; "
                                "5 neighbours leave the graph of real data sets in pieces far more often, and "
                                "geodesics across joined pieces are poor"}),
    _Spec("diffmap", "DiffusionMaps", "embedding", "diffusion maps (Coifman and Lafon 2006)",
          ["n_components:dim"] + GRAPH + ["alpha", "time"]),
    _Spec("cluster", "SpectralClustering", "cluster",
          "spectral clustering: the random-walk Laplacian's eigenvectors, then k-means",
          ["n_clusters:clusters", "dims", "normalize_rows", "n_init:restarts", "warm_start",
           "max_iter:max-iters"] + GRAPH + ["laplacian"] + LLL, transform=False, own=CLUSTER_OWN,
          defaults={"n_clusters": 8}),
    _Spec("cmds", "ClassicalMDS", "embedding", "classical (Torgerson) MDS; of points, their PCA scores",
          ["n_components:dim"]),
    _Spec("mds", "MDS", "embedding", "metric MDS by SMACOF", ["n_components:dim"] + SMACOF + ["weights:@weights"],
          transform=False),
    _Spec("sammon", "Sammon", "embedding", "Sammon's mapping by SMACOF", ["n_components:dim"] + SMACOF, transform=False),
    _Spec("nmds", "NonMetricMDS", "embedding", "non-metric MDS by SMACOF with monotone regression",
          ["n_components:dim"] + SMACOF + ["ties"], transform=False),
    _Spec("lmds", "LandmarkMDS", "embedding", "landmark MDS (de Silva and Tenenbaum 2004)",
          ["n_components:dim", "landmarks"]),
    _Spec("kpca", "KernelPCA", "embedding", "kernel PCA with implicit centring", ["n_components:dim"] + SPARSE_KERNEL),
    _Spec("lda", "LDA", "supervised",
          "linear discriminant analysis: scikit-learn's LinearDiscriminantAnalysis (solver 'svd': its transform up "
          "to signs, its predict) unless ridge is given; n_components None: min(C - 1, D)",
          ["n_components:dim", "tol", "ridge"], defaults={"n_components": None}),
    _Spec("klda", "KernelLDA", "supervised", "kernel LDA (Baudat and Anouar 2000)",
          ["n_components:dim", "ridge"] + KERNEL, defaults={"n_components": None}),
    _Spec("kem", "KernelEigenmaps", "embedding",
          "kernel eigenmaps (Brand 2003): a continuous map G(x) and its inverse",
          ["n_components:dim", "n_neighbors:neighbors", "weights", "heat_t", "symmetrize", "plus_identity",
           "kernels", "placement", "sigma", "local_dims", "local_points", "truncate", "variant", "lpp", "inverse_steps",
           "inverse_width"], inverse=True),
]

# What fit sets from the input (restored when a fit fails).
_INPUT_ATTRIBUTES = ("n_features_in_", "feature_names_in_")

# Figures of the report made attributes (when the report has them).
REPORT_ATTRIBUTES = {
    "eigenvalues": "eigenvalues_",
    "iterations": "n_iter_",
    "E": "objective_",
    "kl_divergence": "kl_divergence_",
    "raw_stress": "stress_",
    "stress1": "stress1_",
    "normalized_stress": "normalized_stress_",
    "sammon_stress": "sammon_stress_",
    "explained_variance": "explained_variance_",
    "explained_variance_ratio": "explained_variance_ratio_",
    "inertia": "inertia_",
    "residual_variance": "residual_variance_",
    "reconstruction_error": "reconstruction_error_",
    "distortion": "distortion_",
}


# --- what the parameters become ------------------------------------------------------------


def _option_text(cls_name, py, value):
    """A parameter's value as the library reads it."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    if isinstance(value, str):
        return value
    raise ValueError(f"{cls_name}: parameter {py}={value!r}: expected a number, a name, True/False or None")


def _same(a, b):
    """Two parameter values the library reads alike."""
    try:
        return _option_text("", "", a) == _option_text("", "", b)
    except ValueError:
        return False


def _seed(random_state):
    if random_state is None:
        return None  # the library's default, 1
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(np.iinfo(np.int32).max))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, (bool, np.bool_)):
        if random_state < 0 or random_state >= 2**64:
            raise ValueError(f"random_state={random_state}: expected an integer in [0, 2^64)")
        return int(random_state)
    raise ValueError(f"random_state={random_state!r}: expected None, an integer or a numpy RandomState")


def _threads(n_jobs):
    if n_jobs is None or n_jobs == -1:
        return 0  # every core
    if not isinstance(n_jobs, numbers.Integral) or isinstance(n_jobs, (bool, np.bool_)) or n_jobs == 0:
        raise ValueError(f"n_jobs={n_jobs!r}: expected None, a positive integer or a negative one (-1: all cores)")
    if n_jobs < 0:  # joblib's convention: -2 = all cores but one
        return max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))
    return int(n_jobs)


def _verbosity(verbose):
    if verbose is None or verbose is False:
        return 0
    if verbose is True:
        return 1
    if isinstance(verbose, numbers.Integral) and verbose >= 0:
        return min(int(verbose), 3)
    raise ValueError(f"verbose={verbose!r}: expected True/False or an integer 0-3")


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([KMGTkmgt]?)(?:[iI]?[bB])?\s*$")


def _max_memory(max_memory):
    """Bytes, or "8G", "512M", "1.5T" as the tool's --max-memory."""
    if max_memory is None:
        return None
    if isinstance(max_memory, numbers.Integral) and not isinstance(max_memory, (bool, np.bool_)) and max_memory > 0:
        return int(max_memory)
    if isinstance(max_memory, str):
        m = _SIZE.match(max_memory)
        if m:
            v = float(m.group(1)) * 1024 ** " KMGT".index((m.group(2) or " ").upper())
            if 1 <= v <= 1e18:
                return int(v)
    raise ValueError(f"max_memory={max_memory!r}: expected bytes (an integer > 0) or a size such as '8G'")


# --- the base class -------------------------------------------------------------------------


class NlembedEstimator(BaseEstimator):
    """What every generated class shares: fit through the library, the
    report's figures as attributes, transform of new points, pickling
    through the model file. Not used directly."""

    _spec = None

    # -- the handle and its options

    def _arrays(self):
        """The parameters given as arrays, which go in the fit's input:
        init (N x n_components, a start) and weights (metric MDS's N x N)."""
        arrays = {}
        for py, libname in self._spec.params:
            value = getattr(self, py)
            if value is not None and py in self._spec.arrays and not isinstance(value, str):
                arrays[py] = check_array(value, dtype=np.float64, order="C", input_name=py)
        return arrays

    def _values(self):
        """Every library parameter's value, scikit-learn's aliases applied
        (an alias given sets its target, which must then be left at its
        default)."""
        values = {py: getattr(self, py) for py, _ in self._spec.params}
        name = type(self).__name__
        for py, alias in self._spec.aliases.items():
            given = getattr(self, py)
            if given is None:
                continue
            target = values[alias.target]
            if target is not None and not _same(target, self._spec.defaults[alias.target]):
                raise ValueError(f"{name}: {py}={given!r} and {alias.target}={target!r} set the same option; "
                                 f"give one ({py} is scikit-learn's name of {alias.target})")
            values[alias.target] = alias.values.get(given, given) if isinstance(given, str) else given
        return values

    def _affinity(self, handle, value, n):
        """scikit-learn's affinity values, as the library's options: True if
        value was one of them. 'precomputed': X holds the affinities;
        'nearest_neighbors': the binary kNN graph made symmetric, (A + A^T)
        / 2, as scikit-learn's; 'rbf': the dense Gaussian kernel exp(-gamma
        |x - y|^2) as the full graph of N - 1 neighbours (where N allows)."""
        name = type(self).__name__
        if value == "precomputed":
            if self.metric not in (None, "affinities", self._spec.defaults.get("metric")):
                raise ValueError(f"{name}: affinity='precomputed' takes the input as affinities; "
                                 f"metric={self.metric!r} says otherwise")
            handle.set("metric", "affinities")
        elif value == "nearest_neighbors":
            handle.set("affinity", "binary")
        elif value == "rbf":
            gamma = getattr(self, "gamma", 1.0)
            if isinstance(gamma, str) or not (isinstance(gamma, numbers.Real) and gamma > 0 and np.isfinite(gamma)):
                raise ValueError(f"{name}: affinity='rbf' takes gamma > 0 (exp(-gamma |x - y|^2)), not {gamma!r}")
            handle.set("affinity", "gaussian")
            handle.set("sigma", repr(float(np.sqrt(0.5 / gamma))))  # exp(-d^2 / 2 sigma^2)
            if n is not None:
                cap = _max_memory(self.max_memory) or int(0.8 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
                need = n * (n - 1) * RBF_BYTES_PER_PAIR
                if need > cap:
                    raise MemoryError(f"{name}: affinity='rbf' is the dense N x N Gaussian kernel: {n} points need "
                                      f"{need / 2**30:.1f} GiB, over the memory cap of {cap / 2**30:.1f} GiB "
                                      f"(max_memory); affinity='nearest_neighbors' keeps n_neighbors per point")
                handle.set("neighbors", str(n - 1))
        else:
            return False
        return True

    def _new_handle(self, n=None):
        """An nle_estimator of the method with this object's parameters set
        (arrays aside: they go in the fit's input); n: the points of the fit
        (what affinity='rbf' needs), None before one. A parameter at the
        library's default is left to the library."""
        name = type(self).__name__
        own = self._spec.own.get("assign_labels")
        if own is not None and getattr(self, "assign_labels") not in ("kmeans", None):
            raise ValueError(f"{name}: assign_labels={self.assign_labels!r}: nlembed assigns the labels by k-means "
                             f"(assign_labels='kmeans'); scikit-learn's 'discretize' and 'cluster_qr' are not offered")
        handle = _core.Estimator(self._spec.method, names=self._spec.names)
        values = self._values()
        affinity = values.get("affinity")
        for py, libname in self._spec.params:
            value = values[py]
            if value is None or (py in self._spec.arrays and not isinstance(value, str)):
                continue
            if libname.startswith("@"):
                raise ValueError(f"{name}: parameter {py} takes an array (or None), not {value!r}")
            if py == "affinity" and self._affinity(handle, value, n):
                continue
            if affinity == "rbf" and py in ("neighbors", "sigma", "n_neighbors"):
                continue  # the kernel's: set by affinity='rbf'
            text = _option_text(name, py, value)
            if text == self._spec.lib_text.get(py):
                continue
            try:
                handle.set(libname, text)
            except ValueError as e:
                raise ValueError(f"{e} (parameter {py})") from None
        return handle

    def _configure(self, handle, seed=False):
        """The context's settings from the parameters; the seed at fit only
        (a transform keeps the fit's)."""
        handle.configure(threads=_threads(self.n_jobs), seed=_seed(self.random_state) if seed else None,
                         verbosity=_verbosity(self.verbose), max_memory=_max_memory(self.max_memory),
                         comm=self.comm)

    def _explain(self, error):
        """A library message naming options by their library names, with the
        Python names of the renamed ones it mentions."""
        text = str(error)
        renamed = [(py, libname) for py, libname in self._spec.params
                   if py != libname.replace("-", "_") and re.search(rf"(?<![\w-]){re.escape(libname)}(?![\w-])", text)]
        if not renamed:
            return error
        hint = ", ".join(f"{libname} is parameter {py}" for py, libname in renamed)
        return type(error)(f"{text} [{type(self).__name__}: {hint}]")

    def library_options(self):
        """The library's options of this method as text: after a fit, the
        values the run resolved (every automatic choice made); before, the
        values this object's parameters give (None: the library's defaults)."""
        handle = getattr(self, "_handle", None) or self._new_handle()
        return {name: handle.get(name) for name in handle.options()}

    # -- input

    def _check_X(self, X, reset):
        """X as the library takes it: float32 (or a float64 CSR), C order,
        finite; the array itself when it already is."""
        return self._validate_data(X, reset=reset, accept_sparse="csr", dtype=[np.float32, np.float64],
                                   order="C", accept_large_sparse=True)

    # -- fit

    def _fit(self, X, y=None):
        kept = {k: self.__dict__[k] for k in _INPUT_ATTRIBUTES if k in self.__dict__}
        try:
            labels = classes = None
            if self._spec.kind == "supervised":
                X, y = self._validate_data(X, y, accept_sparse="csr", dtype=[np.float32, np.float64], order="C",
                                           y_numeric=False, multi_output=False)
                check_classification_targets(y)
                classes, labels = np.unique(y, return_inverse=True)
            else:
                X = self._check_X(X, reset=True)
            arrays = self._arrays()
            handle = self._new_handle(X.shape[0])
            self._configure(handle, seed=True)
            try:
                warning = handle.fit(X, labels=labels, verbose=_verbosity(self.verbose), **arrays)
            except (ValueError, MemoryError) as e:
                raise self._explain(e) from None
        except BaseException:
            # a failed or interrupted fit leaves the estimator as it was
            for k in _INPUT_ATTRIBUTES:
                self.__dict__.pop(k, None)
            self.__dict__.update(kept)
            raise
        if classes is not None:
            self.classes_ = classes
        self._handle = handle
        embedding = handle.embedding()  # a graph method makes none
        if embedding is not None:
            self.embedding_ = embedding.astype(self._spec.dtype, copy=False)
        self.report_ = handle.report()
        for key, attr in REPORT_ATTRIBUTES.items():
            value = self.report_.get(key)
            if value is not None:
                setattr(self, attr, np.asarray(value) if isinstance(value, list) else value)
        if getattr(self, "explained_variance_", None) is not None and self.report_.get("total_variance"):
            self.explained_variance_ratio_ = self.explained_variance_ / self.report_["total_variance"]
        _core.warn(warning)  # once the fit is complete (a filter may turn them into errors)
        return self

    # -- new points

    def _model(self):
        check_is_fitted(self, "embedding_")
        handle = getattr(self, "_handle", None)
        if handle is None:
            raise ValueError(f"{type(self).__name__}: this fit kept no model for new points (fitted on "
                             f"precomputed input, or with keep_model=False)")
        self._configure(handle)
        return handle

    def _new_points(self, X):
        handle = self._model()
        X = self._check_X(X, reset=False)
        if sp.issparse(X):
            X = X.toarray()  # the maps take dense rows
        return handle, X

    # -- pickling: the model file's bytes

    def __getstate__(self):
        state = dict(super().__getstate__())
        handle = state.pop("_handle", None)
        if handle is not None:
            try:
                state["_model_file"] = handle.save_bytes()
            except ValueError:  # a fit with no model: the attributes only
                state["_model_file"] = None
        return state

    def __setstate__(self, state):
        state = dict(state)
        data = state.pop("_model_file", None)
        super().__setstate__(state)
        if data is not None:
            handle = _core.Estimator.load_bytes(data, names=self._spec.names)
            # the model file does not keep the metric new points are compared by
            metric = self.__dict__.get("report_", {}).get("options", {}).get("metric")
            if metric:
                handle.set("metric", metric)
            self._handle = handle

    def _more_tags(self):
        tags = {"_xfail_checks": dict(_XFAIL.get(self._spec.method, {}))}
        if self._spec.dtype == np.float32:  # scikit-learn's TSNE: float32 out whatever comes in
            tags["preserves_dtype"] = [np.float32]
        return tags


class _Embedding(NlembedEstimator, TransformerMixin):
    def fit(self, X, y=None):
        """Fits the method to X (N x D points; an N x N matrix of distances
        with metric="precomputed", of affinities with metric="affinities";
        a scipy sparse matrix where the method takes one). y is ignored."""
        return self._fit(X, y)

    def fit_transform(self, X, y=None):
        """fit(X) and the embedding of X (embedding_)."""
        return self._fit(X, y).embedding_


class _Graph(NlembedEstimator, TransformerMixin):
    def fit(self, X, y=None):
        """Builds the graph of X (N x D points; an N x N matrix of distances
        with metric="precomputed"; a scipy sparse matrix of rows): graph_
        (scipy CSR, N x N) and, for entropic affinities, betas_ (each
        point's precision 1 / (2 sigma^2)). y is ignored."""
        self._fit(X, y)
        self.graph_ = self._handle.graph()
        betas = self._handle.betas()
        if betas is not None:
            self.betas_ = betas
        return self

    def fit_transform(self, X, y=None):
        """fit(X) and its graph (graph_)."""
        return self.fit(X, y).graph_


def _mapped(est, handle, map_options, call):
    """call() with the options of the maps of new points set for it (the
    library's rows of `nlembed transform`, docs/options.md: max_iter for
    max-iters, the others by their names with '_' for '-'), each back to
    its default after."""
    name, done = type(est).__name__, []
    try:
        for py, value in map_options.items():
            libname = "max-iters" if py == "max_iter" else py.replace("_", "-")
            try:
                handle.set_map(libname, _option_text(name, py, value))
            except ValueError as e:
                raise ValueError(f"{e} (parameter {py} of the map)") from None
            done.append(libname)
        return call()
    except (ValueError, MemoryError) as e:
        raise est._explain(e) from None
    finally:
        for libname in done:
            handle.set_map(libname, handle.map_default(libname))


class _Transform:
    def transform(self, X, **map_options):
        """New points through the fitted model (the method's map for new
        points, see docs/transform.md): an M x n_components array.
        map_options: the map's own options, for this call (docs/options.md,
        "nlembed transform"): max_iter (F(y)'s iterations per point),
        repulsion (its engine); a map that does not take one refuses it."""
        handle, X = self._new_points(X)
        return _mapped(self, handle, map_options, lambda: handle.transform(
            X, verbose=_verbosity(self.verbose)).astype(self._spec.dtype, copy=False))


class _Inverse:
    def inverse_transform(self, X, **map_options):
        """Points of the embedding (M x n_components) back to data space
        through the method's reverse map: an M x D float32 array.
        map_options: as transform's (EE's f(x): max_iter, its iterations
        from the nearest training point's y; 0 by default)."""
        handle = self._model()
        X = check_array(X, dtype=np.float64, order="C", input_name="X")
        if X.shape[1] != self.embedding_.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__}.inverse_transform "
                             f"expects {self.embedding_.shape[1]} (n_components)")
        return _mapped(self, handle, map_options, lambda: handle.inverse(X, verbose=_verbosity(self.verbose)))


class _Supervised(NlembedEstimator, TransformerMixin):
    def fit(self, X, y):
        """Fits the method to X (N x D points) with their class labels y."""
        return self._fit(X, y)

    def fit_transform(self, X, y):
        return self._fit(X, y).embedding_

    def _more_tags(self):
        tags = super()._more_tags()
        tags["requires_y"] = True
        return tags


class _Classifier(ClassifierMixin):
    """LDA's and kernel LDA's classifier, scikit-learn's rule (the library
    computes it): in every discriminant direction, the class whose mean is
    nearest, less its log prior. classes_ holds the labels as given."""

    def _classify(self, X, proba):
        handle, X = self._new_points(X)
        try:
            return handle.decision(X, proba=proba, verbose=_verbosity(self.verbose))
        except (ValueError, MemoryError) as e:
            raise self._explain(e) from None

    def decision_function(self, X):
        """Scores of new points, one column per class (classes_); with two
        classes the one column of the second minus the first, as
        scikit-learn's."""
        scores = self._classify(X, False)
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def predict_proba(self, X):
        """Class probabilities of new points (the softmax of the scores)."""
        return self._classify(X, True)

    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))

    def predict(self, X):
        """The class of new points (values of classes_)."""
        handle, X = self._new_points(X)
        try:
            codes = handle.predict(X, verbose=_verbosity(self.verbose))
        except (ValueError, MemoryError) as e:
            raise self._explain(e) from None
        return self.classes_[codes]


class _Clustering(NlembedEstimator, ClusterMixin):
    def fit(self, X, y=None):
        """Clusters X: labels_ (N cluster indices), embedding_ (the spectral
        coordinates they were clustered in). y is ignored."""
        self._fit(X, y)
        self.labels_ = self._handle.labels().astype(np.int32)
        return self

    def predict(self, X):
        """Cluster labels of new points: the nearest centre after the
        spectral map of new points."""
        handle, X = self._new_points(X)
        try:
            return handle.predict(X, verbose=_verbosity(self.verbose))
        except (ValueError, MemoryError) as e:
            raise self._explain(e) from None


# --- checks of scikit-learn that cannot hold, with the reason ----------------------------------

_ONE_SAMPLE = ("the library refuses a single point, with its own words ('nle_embed: 1 points; an embedding needs "
               "at least 3', 'PCA needs at least 2 points, got 1'); the check wants scikit-learn's ('1 sample', "
               "'n_samples = 1')")
_NEW_POINTS = ("transform(X) places X as new points through the out-of-sample map F(y) (each optimised against "
               "the fitted embedding), so it does not return fit_transform's coordinates of the training points "
               "(scikit-learn's TSNE has no transform at all); the maps are tested in test_transform.py")
_BLOBS = ("Isomap needs a connected neighbourhood graph (geodesics between separated pieces are infinite); the "
          "check's data are separated blobs and the library refuses them, naming k (scikit-learn's Isomap joins "
          "the pieces by their nearest pairs, a choice nlembed does not make)")
_ONE_CLUSTER = ("the check sets n_clusters = 1; the library takes at least 2 clusters (one cluster is every point, "
                "no spectral problem) and refuses 1, naming the option")

_XFAIL = {method: {"check_fit2d_1sample": _ONE_SAMPLE} for method in
          ("tsne", "tee", "ee", "ssne", "sne", "pca", "knn", "affinity", "le", "lle", "mlle", "ltsa", "hlle", "isomap",
           "diffmap", "cluster", "cmds", "mds", "sammon", "nmds", "lmds", "kpca", "kem")}
for _m in ("tsne", "tee", "ee", "ssne", "sne"):
    _XFAIL[_m].update(check_transformer_general=_NEW_POINTS, check_transformer_data_not_an_array=_NEW_POINTS)
_XFAIL["isomap"].update({c: _BLOBS for c in (
    "check_pipeline_consistency", "check_estimators_nan_inf", "check_estimators_pickle",
    "check_transformer_data_not_an_array", "check_transformer_general", "check_transformer_preserve_dtypes")})
_XFAIL["isomap"]["check_fit2d_1feature"] = (
    "the check's 10 points are fewer than the 13 the blob data's k = 12 needs, and the library's message ('k = 12 "
    "neighbours of 10 points') is not the '1 feature(s)' the check wants")
_XFAIL["cluster"].update({c: _ONE_CLUSTER for c in (
    "check_methods_subset_invariance", "check_fit2d_1feature", "check_dict_unchanged",
    "check_dont_overwrite_parameters", "check_fit2d_predict1d")})
_XFAIL["cluster"]["check_non_transformer_estimators_n_iter"] = (
    "the library's report of a clustering has no k-means iteration count for n_iter_ "
    "(a change of the library is requested)")


# --- making the classes ------------------------------------------------------------------------


def _from_text(text):
    """A library option's text (nle_estimator_get) as a Python value: True
    or False, an int, a float, or the name ('auto', 'exact', ...)."""
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _library_defaults(spec):
    """The text and the Python value of every option's default, as a fresh
    nle_estimator of the method reports them."""
    text = {py: spec.rows[libname]["default"] for py, libname in spec.params if not libname.startswith("@")}
    return text, {py: _from_text(t) for py, t in text.items()}


def _signature_names(spec):
    return [py for py, _ in spec.params] + list(spec.own) + list(spec.aliases) + CONTEXT


def _init_source(spec):
    """An explicit __init__ (scikit-learn reads its signature): every
    parameter stored as given, nothing checked; the defaults are the
    library's own values (_D), where the class does not follow
    scikit-learn's."""
    names = _signature_names(spec)
    first, rest = names[0], names[1:]
    lines = [f"def __init__(self, {first}=_D[{first!r}], *, " + ", ".join(f"{n}=_D[{n!r}]" for n in rest) + "):"]
    lines += [f"    self.{n} = {n}" for n in names]
    return "\n".join(lines) + "\n"


_CONTEXT_DOC = [
    ("random_state", "int or RandomState or None", "None", "the seed (None: the library's seed 1), or a numpy "
                                                         "RandomState/Generator to draw one from"),
    ("n_jobs", "int or None", "None", "threads; None or -1: every core; -2: all but one"),
    ("verbose", "int or bool", "0", "0 silent; 1 (True) a progress bar and the library's summary lines; 2-3 more "
                                    "detail"),
    ("max_memory", "int or str or None", "None", "cap on one dense allocation, bytes or '8G' (per rank under "
                                                 "MPI); None: 80% of RAM"),
    ("comm", "mpi4py communicator or None", "None", "a distributed run (docs/mpi.md): every rank of comm calls fit "
                                                  "with its own rows (rows in rank order) and gets its rows of the "
                                                  "embedding; transform maps each rank's rows. None: alone"),
]


# The parameters given as arrays, which the library takes in the fit's
# input rather than as options.
_ARRAY_DOC = {
    "init": "an N x n_components start (the library option init names its automatic starts)",
    "weights": "N x N weights w_ij (symmetric, >= 0)",
}
_KIND_TYPES = {"int": "int", "number": "float", "switch": "bool", "name": "str", "text": "str"}


def _describe(spec, py, libname):
    """(type, meaning) of a parameter: the library option's row, or the
    array the fit's input takes."""
    if libname.startswith("@"):
        return "array", _ARRAY_DOC[libname[1:]] + f" (passed in the fit's input, nle_estimator_input.{libname[1:]})"
    info = spec.rows[libname]
    typ = _KIND_TYPES[info["kind"]] + (" or 'auto'" if info["auto_ok"] else "")
    if py in spec.arrays:
        typ += " or array"
    about = info["help"]
    if info["values"] and info["kind"] != "name":
        about += f" ({info['values']})"
    if py != libname.replace("-", "_"):
        about += f" (library option {libname})"
    if py in spec.notes:
        about += f"; {spec.notes[py]}"
    return typ, about


def _doc(spec):
    lines = [f"nlembed's {spec.about} (`nlembed {spec.method}`), as a scikit-learn estimator.", "",
             "Parameters", "----------",
             "Each is the library option of `nlembed " + spec.method + " --help` (the Python name with '_' for "
             "'-', or as noted); 'auto' is the library's choice, reported in report_['options'] after a fit; "
             "None means the library's default.", ""]
    for py, libname in spec.params:
        typ, about = _describe(spec, py, libname)
        default = spec.defaults.get(py)
        if py in spec.py_defaults:
            about += f"; scikit-learn's default, the library's is {spec.lib_defaults[py]!r}"
        lines += [f"{py} : {typ}, default={default!r}", f"    {about}"]
    for py, own in spec.own.items():
        lines += [f"{py} : {own.type}, default={own.default!r}", f"    {own.about}"]
    for py, alias in spec.aliases.items():
        lines += [f"{py} : alias, default=None", f"    {alias.about}; given, it sets {alias.target}"]
    for py, typ, default, about in _CONTEXT_DOC:
        lines += [f"{py} : {typ}, default={default}", f"    {about}"]
    return "\n".join(lines)


def _python_name(option):
    """A library option's Python parameter: '-' as '_', a Python keyword
    with '_value' (lambda -> lambda_value)."""
    py = option.replace("-", "_")
    return py + "_value" if keyword.iskeyword(py) else py


def _library_rows(spec):
    """Every option row of the method (the library's table): the parameters
    the class's table does not name yet are added under their own names, so
    that a new library option is a parameter without a line here."""
    handle = _core.Estimator(spec.method)
    try:
        spec.rows = {name: handle.option_info(name) for name in handle.options()}
    finally:
        handle.close()
    named = {libname for _, libname in spec.params}
    for name in spec.rows:
        if name not in named:
            spec.add(_python_name(name), name)


def _make(spec):
    base = {"embedding": _Embedding, "cluster": _Clustering, "supervised": _Supervised, "graph": _Graph}[spec.kind]
    bases = (((_Classifier,) if spec.kind == "supervised" else ()) + (base,) + ((_Transform,) if spec.transform else ())
             + ((_Inverse,) if spec.inverse else ()))
    _library_rows(spec)
    spec.lib_text, spec.lib_defaults = _library_defaults(spec)
    spec.defaults = dict(spec.lib_defaults)
    for py, libname in spec.params:
        if libname.startswith("@"):
            spec.defaults[py] = None
    spec.defaults.update(spec.py_defaults)
    spec.defaults.update({py: own.default for py, own in spec.own.items()})
    spec.defaults.update({py: None for py in spec.aliases})
    spec.defaults.update(random_state=None, n_jobs=None, verbose=0, max_memory=None, comm=None)
    namespace = {"_D": dict(spec.defaults)}
    exec(_init_source(spec), namespace)  # noqa: S102 - our own table
    init = namespace["__init__"]
    init.__qualname__ = f"{spec.cls}.__init__"
    return type(spec.cls, bases, {"__init__": init, "__doc__": _doc(spec), "_spec": spec,
                                  "__module__": "nlembed"})


CLASSES = {spec.cls: _make(spec) for spec in METHODS}
