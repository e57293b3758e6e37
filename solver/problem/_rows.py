"""A pod-type × node matrix whose rows are shared: `rows[of_type[t]]`.

Pod types with the same eligibility (same selectors, same queue, same card alternatives)
have identical rows; with 1,000 gangs on 10,000 nodes a dense matrix per type would be
hundreds of megabytes of copies. `Rows` keeps each distinct row once and indexes it like the
dense matrix it stands for: `m[t]`, `m[t, nodes]`, `m[types]`, `m[t_array, n_array]`.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["Rows"]

S = TypeVar("S", bound=np.generic)


class Rows(Generic[S]):
    def __init__(self, rows: npt.NDArray[S], of_type: npt.NDArray[np.int64]) -> None:
        self.rows = rows
        self.of_type = of_type
        rows.flags.writeable = False
        of_type.flags.writeable = False

    @classmethod
    def dense(cls, matrix: npt.NDArray[S]) -> Rows[S]:
        """One row per type (tests and small problems)."""
        return cls(np.array(matrix), np.arange(matrix.shape[0], dtype=np.int64))

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.of_type), self.rows.shape[1])

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.rows.dtype

    def __len__(self) -> int:
        return len(self.of_type)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, tuple):
            t, *rest = key
            return self.rows[(self.of_type[t], *rest)]
        return self.rows[self.of_type[key]]

    def __array__(self, dtype: Any = None, copy: Any = None) -> npt.NDArray[Any]:
        out = self.rows[self.of_type]
        return out if dtype is None else out.astype(dtype)

    def tolist(self) -> list[Any]:
        out: list[Any] = np.asarray(self).tolist()
        return out

    def select(self, types: npt.NDArray[np.int64] | list[int]) -> Rows[S]:
        """The sub-matrix of `types` (shares the rows)."""
        return Rows(self.rows, self.of_type[np.asarray(types, dtype=np.int64)].copy())
