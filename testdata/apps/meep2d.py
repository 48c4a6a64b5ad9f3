"""meep2d.py: a 2-D FDTD run with Meep (Debian's python3-meep-openmpi), for
dtpa's end-to-end tests (TestMeep).

A Gaussian pulse travels down a straight dielectric waveguide in a 16 x 8
cell with PML borders, resolution 10, 4000 time steps; a flux monitor near
the far end accumulates the transmitted flux at 5 frequencies. At 4 ranks
Meep splits the cell into 18 chunks (the PML layers cut apart) owned by the
ranks in four slabs side by side, rank 0 to 3, and each time step every
rank exchanges its chunks' boundary fields with the ranks of the
neighbouring slabs (MPI_Isend, MPI_Irecv, MPI_Waitsome); sums over the
ranks are MPI_Allreduce. Interval 1
is the time stepping (MPI_Pcontrol through ctypes: dtmarks.py).

Rank 0 prints the fluxes and the electric energy in the cell (they must not
depend on tracing), then Meep's own accounting of each rank's time in its
point-to-point and all-to-all communication ("1-1 communication" and
"all-all communication" of Meep's timing data, seconds).

    dtrun -np 4 python3 meep2d.py && dtpa python3
"""

import meep as mp
from dtmarks import pcontrol


guide = mp.Block(mp.Vector3(mp.inf, 1, mp.inf), center=mp.Vector3(), material=mp.Medium(epsilon=12))
pulse = mp.Source(mp.GaussianSource(0.15, fwidth=0.1), component=mp.Ez, center=mp.Vector3(-6, 0), size=mp.Vector3(0, 1))
sim = mp.Simulation(cell_size=mp.Vector3(16, 8), geometry=[guide], sources=[pulse],
                    boundary_layers=[mp.PML(1.0)], resolution=10)
flux = sim.add_flux(0.15, 0.1, 5, mp.FluxRegion(center=mp.Vector3(6, 0), size=mp.Vector3(0, 2)))
sim.init_sim()
pcontrol(100, 1)
sim.run(until=200)
pcontrol(101, 1)
fluxes = mp.get_fluxes(flux)
energy = sim.electric_energy_in_box(center=mp.Vector3(), size=mp.Vector3(14, 6))
timing = sim.get_timing_data()
if mp.am_master():
    print("meep: flux " + " ".join(repr(x) for x in fluxes))
    print("meep: energy %r" % energy)
    for name, sink in (("one", mp.MpiOneTime), ("all", mp.MpiAllTime)):
        print("meep: %s %s" % (name, " ".join("%.6f" % x for x in timing[sink])))
