# poisson_dolfinx.py: FEniCSx (DOLFINx 0.5, Debian's python3-dolfinx-real)
# solving -Δu = -6 on the unit square with u = 1 + x² + 2y² on the boundary,
# for dtpa's end-to-end tests. P1 elements reproduce that u exactly at the
# nodes, so the largest nodal error is the solver's tolerance. DOLFINx
# partitions the mesh and builds its index maps with the nonblocking
# consensus (MPI_Issend, MPI_Iprobe, MPI_Ibarrier) and neighbourhood
# collectives on distributed graph communicators; PETSc solves (CG, GAMG).
from mpi4py import MPI
import numpy as np
import ufl
from dolfinx import fem, mesh
from dolfinx.fem.petsc import LinearProblem
from petsc4py.PETSc import ScalarType

domain = mesh.create_unit_square(MPI.COMM_WORLD, 64, 64, mesh.CellType.triangle)
V = fem.FunctionSpace(domain, ("Lagrange", 1))
uD = fem.Function(V)
uD.interpolate(lambda x: 1 + x[0]**2 + 2 * x[1]**2)
fdim = domain.topology.dim - 1
domain.topology.create_connectivity(fdim, domain.topology.dim)
bfacets = mesh.exterior_facet_indices(domain.topology)
bc = fem.dirichletbc(uD, fem.locate_dofs_topological(V, fdim, bfacets))
u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
f = fem.Constant(domain, ScalarType(-6))
a = ufl.dot(ufl.grad(u), ufl.grad(v)) * ufl.dx
L = f * v * ufl.dx
problem = LinearProblem(a, L, bcs=[bc], petsc_options={"ksp_type": "cg", "pc_type": "gamg", "ksp_rtol": 1e-12})
uh = problem.solve()
err = np.max(np.abs(uh.x.array - uD.x.array))
err = domain.comm.allreduce(err, op=MPI.MAX)
if domain.comm.rank == 0:
    print("poisson: max nodal error %.1e" % err)
