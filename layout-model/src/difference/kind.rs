//! What a difference is about: [`DifferenceKind`], a listable set of tokens.

gpu_partition_types::token_enum! {
    /// What a difference is about. The set is listable ([`Token::ALL`]): a metric by kind or an
    /// embedder that acts on some kinds names every one.
    ///
    /// [`Token::ALL`]: gpu_partition_types::Token::ALL
    #[non_exhaustive]
    pub enum DifferenceKind: "difference" {
        /// The MIG mode (now, or pending), or a card with no MIG mode where MIG is wanted.
        Mode = "mode",
        /// A profile of the layout the card's catalogue does not have.
        Profile = "profile",
        /// How many GPU instances of a profile (where the placements are not decided).
        InstanceCount = "instance_count",
        /// No GPU instance at a placement where the layout places one.
        InstanceMissing = "instance_missing",
        /// A GPU instance the layout does not name.
        InstanceExtra = "instance_extra",
        /// A GPU instance at another placement than the one the layout places it at.
        InstanceMoved = "instance_moved",
        /// A GPU instance at none of its profile's placements.
        InstanceMisplaced = "instance_misplaced",
        /// A GPU instance whose compute instances are not the one that fills it.
        ComputeInstances = "compute_instances",
        /// Another board in the slot than the one declared.
        Board = "board",
        /// No GPU at the address any more.
        GpuGone = "gpu_gone",
        /// The card could not be read at all.
        Unread = "unread",
        /// The card's reply did not read whole.
        Unreadable = "unreadable",
        /// No virtual function is enabled where vGPUs are declared on them.
        VfsGone = "vfs_gone",
        /// How many VFs hold a declared vGPU type: fewer (a type gone) or more.
        VgpuCount = "vgpu_count",
        /// VFs hold a vGPU type the declaration does not name (a type changed).
        VgpuExtra = "vgpu_extra",
        /// A virtual function whose vGPU type is not its declared one (none found, none
        /// declared, or another type), naming the VF.
        VfType = "vf_type",
        /// A GPU of another vendor than the declared one in its slot.
        Vendor = "vendor",
        /// The GPU's SR-IOV state did not read.
        VfsUnreadable = "vfs_unreadable",
        /// A vGPU type the config names that the card cannot hold as asked (not in its
        /// catalogue, more than it holds, not sized by it).
        VgpuType = "vgpu_type",
        /// An AMD GPU's compute partition (SPX … CPX).
        ComputePartition = "compute_partition",
        /// An AMD GPU's memory partition (NPS1 … NPS8), now or requested.
        MemoryPartition = "memory_partition",
        /// An AMD GPU's partitions did not read (in reset, no mode set, no partition files).
        PartitionsUnread = "partitions_unread",
    }
}
