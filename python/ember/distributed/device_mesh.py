"""DeviceMesh: the ranks of the world laid out as an n-d array (torch.distributed.device_mesh).

Each mesh dimension has a process group per line of the mesh along it (on a 2 x 2 mesh ("dp",
"tp") of ranks [[0, 1], [2, 3]]: tp groups {0, 1} and {2, 3}, dp groups {0, 2} and {1, 3}); a rank
talks along a dimension through the group of its own line. Every rank builds every group, in
the same order, as new_group requires.

    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    mesh["tp"].get_group()      # this rank's tensor-parallel group
"""
import itertools

import ember

__all__ = ["DeviceMesh", "init_device_mesh"]


class DeviceMesh:
    def __init__(self, device_type, mesh, *, mesh_dim_names=None, _init_backend=True, _groups=None):
        from . import distributed_c10d as c10d
        if not c10d.is_initialized():
            raise RuntimeError("DeviceMesh: the default process group has not been initialized, please call "
                               "init_process_group first")
        self.device_type = str(device_type)
        m = mesh if isinstance(mesh, ember.Tensor) else ember.tensor(mesh, dtype=ember.int64)
        if m.dim() == 0:
            raise ValueError("DeviceMesh: expected a mesh of at least one dimension")
        self.mesh = m
        ranks = m.flatten().tolist()
        world = c10d.get_world_size()
        if len(set(ranks)) != len(ranks) or any(not 0 <= r < world for r in ranks):
            raise ValueError(f"DeviceMesh: the mesh must hold distinct ranks of the world (size {world}), got {ranks}")
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(mesh_dim_names) != m.dim():
                raise ValueError(f"DeviceMesh: mesh_dim_names {mesh_dim_names} must name each of the mesh's "
                                 f"{m.dim()} dimensions")
            if len(set(mesh_dim_names)) != len(mesh_dim_names):
                raise RuntimeError(f"DeviceMesh: duplicate mesh_dim_names {mesh_dim_names}")
        self.mesh_dim_names = mesh_dim_names
        me = c10d.get_rank()
        coord = None
        for idx in itertools.product(*[range(s) for s in m.shape]):
            if int(m[idx]) == me:
                coord = list(idx)
        self._coordinate = coord
        if _groups is not None:
            self._dim_groups = list(_groups)
        elif _init_backend:
            self._dim_groups = self._build_groups()
        else:
            self._dim_groups = [None] * m.dim()

    def _build_groups(self):
        from . import distributed_c10d as c10d
        m, groups = self.mesh, []
        if m.dim() == 1 and m.tolist() == list(range(c10d.get_world_size())):
            return [c10d.group.WORLD]
        for d in range(m.dim()):
            mine = None
            moved = m.movedim(d, -1).reshape(-1, m.shape[d])  # one row per line along d
            for line in moved.tolist():
                g = c10d.new_group(line)
                if c10d.get_rank() in line:
                    mine = g
            groups.append(mine)
        return groups

    @staticmethod
    def _for_group(group, device_type="cpu"):
        """The 1-D mesh of an existing group (no new groups)."""
        from . import distributed_c10d as c10d
        return DeviceMesh(device_type, c10d.get_process_group_ranks(group), _groups=[group])

    # ---- shape and position ------------------------------------------------------------------

    @property
    def ndim(self):
        return self.mesh.dim()

    @property
    def shape(self):
        return tuple(self.mesh.shape)

    def size(self, mesh_dim=None):
        return self.mesh.numel() if mesh_dim is None else self.mesh.shape[self._dim(mesh_dim)]

    def _dim(self, mesh_dim):
        if isinstance(mesh_dim, str):
            if not self.mesh_dim_names or mesh_dim not in self.mesh_dim_names:
                raise KeyError(f"DeviceMesh: no dimension named {mesh_dim!r} (names: {self.mesh_dim_names})")
            return self.mesh_dim_names.index(mesh_dim)
        if not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"DeviceMesh: mesh_dim {mesh_dim} out of range for a {self.ndim}-d mesh")
        return mesh_dim % self.ndim

    def get_rank(self):
        from . import distributed_c10d as c10d
        return c10d.get_rank()

    def get_coordinate(self):
        return list(self._coordinate) if self._coordinate is not None else None

    def get_local_rank(self, mesh_dim=None):
        if mesh_dim is None:
            if self.ndim != 1:
                raise RuntimeError("DeviceMesh.get_local_rank: name mesh_dim on a mesh of more than one dimension")
            mesh_dim = 0
        return self._coordinate[self._dim(mesh_dim)]

    def get_group(self, mesh_dim=None):
        if mesh_dim is None:
            if self.ndim != 1:
                raise RuntimeError(f"DeviceMesh.get_group: found a {self.ndim}-d mesh; name the mesh_dim")
            mesh_dim = 0
        g = self._dim_groups[self._dim(mesh_dim)]
        if g is None:
            raise RuntimeError("DeviceMesh.get_group: this rank is not in the mesh")
        return g

    def get_all_groups(self):
        return [self.get_group(d) for d in range(self.ndim)]

    def __getitem__(self, names):
        """The 1-D sub-mesh along one named dimension that holds this rank."""
        if isinstance(names, tuple):
            if len(names) != 1:
                raise NotImplementedError("DeviceMesh: slicing out more than one dimension is not supported yet")
            names = names[0]
        d = self._dim(names)
        coord = list(self._coordinate)
        index = tuple(slice(None) if i == d else c for i, c in enumerate(coord))
        return DeviceMesh(self.device_type, self.mesh[index], mesh_dim_names=(self.mesh_dim_names[d],)
                          if self.mesh_dim_names else None, _groups=[self._dim_groups[d]])

    def __repr__(self):
        names = f", mesh_dim_names={self.mesh_dim_names}" if self.mesh_dim_names else ""
        return f"DeviceMesh('{self.device_type}', {self.mesh.tolist()}{names})"

    def __eq__(self, other):
        return (isinstance(other, DeviceMesh) and self.mesh.tolist() == other.mesh.tolist()
                and self.mesh_dim_names == other.mesh_dim_names)

    def __hash__(self):
        return hash((str(self.mesh.tolist()), self.mesh_dim_names))


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None):
    from . import distributed_c10d as c10d
    shape = tuple(mesh_shape)
    n = 1
    for s in shape:
        n *= s
    if n != c10d.get_world_size():
        raise RuntimeError(f"init_device_mesh: mesh_shape {shape} holds {n} ranks, but the world size is "
                           f"{c10d.get_world_size()}")
    return DeviceMesh(device_type, ember.arange(n).reshape(shape), mesh_dim_names=mesh_dim_names)
