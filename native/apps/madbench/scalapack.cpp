#include "scalapack.hpp"

#include <algorithm>
#include <cmath>

#include "error.hpp"

namespace petacomm::apps::madbench {

void grid_shape(int p, int &rows, int &cols) {
  rows = static_cast<int>(std::sqrt(static_cast<double>(p)));
  while (rows > 1 && p % rows != 0) --rows;
  rows = std::max(rows, 1);
  cols = p / rows;
}

BlockCyclic::BlockCyclic(const Grid &g, int n_, int nb_) : grid(&g), n(n_), nb(nb_) {
  if (!g.contains_me()) return;  // desc[1] = -1: "not in this grid" for pdgemr2d
  const int zero = 0;
  local_rows = numroc_(&n, &nb, &g.my_row, &zero, &g.rows);
  local_cols = numroc_(&n, &nb, &g.my_col, &zero, &g.cols);
  lld = std::max(1, local_rows);
  int info = 0;
  descinit_(desc, &n, &n, &nb, &nb, &zero, &zero, &g.context, &lld, &info);
  if (info != 0) fail_internal("descinit_ returned info ", info);
}

}  // namespace petacomm::apps::madbench
